"""vLLM backend: selected only with CUDA present and `vllm` importable (server.select_backend); this module
is never imported otherwise. Untested on the project's machines (no vllm there): keep it small.

- Prompts go in as token ids (TokensPrompt), so vLLM samples from exactly the ids the server rendered.
- A `<run>@<step>` model becomes a LoRARequest on the checkpoint dir (vLLM loads and caches it); a rewritten
  checkpoint (new mtime) gets a new LoRA id so a stale copy is never served.
- Around the trainer's store.exclusive(), vLLM sleeps (level 1: weights offloaded, KV cache freed) so the
  trainer's HF model has the GPU memory, and wakes after.
- `n` > 1 is sent as n requests with seeds seed+i, the transformers backend's convention.
- A forced tool call (GenerationRequest.grammar) goes to vLLM's guided decoding (vllm_args.guided_decoding_kwargs),
  the transformers backend's constraint by the same library (llguidance).
- Logprobs: SamplingParams(logprobs=k) returns the sampled token's logprob and the k most likely; vLLM's
  default logprobs_mode "raw_logprobs" is the raw model distribution, the convention in backends/base.py.
- Streaming: each output vLLM yields carries the tokens so far; new ones go to `on_token` (on the event
  loop, where this runs). Cancellation: cancelling the task iterating `engine.generate` makes vLLM abort the
  request, which frees its slot in the running batch.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

from vllm import AsyncEngineArgs, AsyncLLMEngine, SamplingParams
from vllm.inputs import TokensPrompt
from vllm.lora.request import LoRARequest

from ..model_loader import ensure_local
from ..model_store import ModelStore
from ..settings import EngineSettings, engine_settings
from .base import GenerationRequest, GenerationResult, SampledToken
from .vllm_args import guided_decoding_kwargs, vllm_engine_args

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
        args = AsyncEngineArgs(**vllm_engine_args(
            ensure_local(store.base_model_name), store.max_context_tokens, store.max_loaded_adapters, settings,
        ))
        self.engine = AsyncLLMEngine.from_engine_args(args)
        self._lora_ids: dict[str, tuple[int, float]] = {}  # "<run>@<step>" -> (vLLM LoRA id, mtime)
        self._next_lora_id = 1
        self.stats = {"requests": 0, "rows": 0, "completion_tokens": 0}
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
        mtime = (path / "adapter_config.json").stat().st_mtime
        known = self._lora_ids.get(model)
        if known is None or known[1] != mtime:
            known = (self._next_lora_id, mtime)
            self._next_lora_id += 1
            self._lora_ids[model] = known
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
        final, seen = None, 0
        async for out in self.engine.generate(
            TokensPrompt(prompt_token_ids=req.prompt_token_ids), params, request_id=uuid.uuid4().hex,
            lora_request=lora,
        ):
            final = out
            c = out.outputs[0]
            if req.on_token is not None:
                for pos in range(seen, len(c.token_ids)):
                    tid, step = c.token_ids[pos], (c.logprobs or [])[pos]
                    req.on_token(index, SampledToken(tid, step[tid].logprob, _top(step, k)))
                seen = len(c.token_ids)
        assert final is not None
        c = final.outputs[0]
        ids = list(c.token_ids)
        steps = list(c.logprobs or [])
        logprobs = [step[tid].logprob for step, tid in zip(steps, ids)]
        result = GenerationResult(ids, logprobs, c.text, "length" if c.finish_reason == "length" else "stop",
                                  [_top(step, k) for step in steps] if k else None)
        if req.on_finish is not None:
            req.on_finish(index, result)
        return result

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

    def health(self) -> dict[str, Any]:
        return dict(self.stats)

    async def close(self) -> None:
        shutdown = getattr(self.engine, "shutdown", None)
        if shutdown is not None:
            shutdown()


def _top(step: dict, k: int) -> list[tuple[int, float]]:
    """The k most likely of one step's logprobs (vLLM adds the sampled token, ranked wherever it is)."""
    if not k:
        return []
    ranked = sorted(((lp.rank, tid, lp.logprob) for tid, lp in step.items() if lp.rank is not None and lp.rank <= k))
    return [(tid, logprob) for _rank, tid, logprob in ranked]
