"""Batched sampling on the store's PeftModel with plain transformers (CPU or CUDA).

Concurrent requests are expanded into rows (one per sample of `n`) and queued. A single worker takes every
pending row for the same model (base or one checkpoint adapter), up to `max_batch`, after a few-ms gather
window, and runs one left-padded sampling loop over them with a KV cache. Rows leave the batch (and the
cache) as they finish, so one long answer does not make the others pay for padding steps.

Our own loop rather than `generate()`: per-row temperature / top_p / seed / stop / max_tokens, and the exact
logprob of each sampled token under the raw (temperature-1) distribution, see backends/base.py.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Sequence

import torch
from transformers import DynamicCache

from ..model_store import ModelStore
from .base import GenerationRequest, GenerationResult

log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Row:
    model: str
    prompt: list[int]
    max_tokens: int
    temperature: float
    top_p: float
    seed: int
    stop: list[str]
    future: asyncio.Future


class TransformersBackend:
    name = "transformers"

    def __init__(self, store: ModelStore, max_batch: int | None = None, gather_ms: float | None = None) -> None:
        self.store = store
        self.max_batch = max_batch or int(os.environ.get("ROLLBOOK_MAX_BATCH", "32"))
        self.gather_s = (gather_ms if gather_ms is not None else float(os.environ.get("ROLLBOOK_GATHER_MS", "5"))) / 1000
        self._pending: deque[_Row] = deque()
        self._wakeup: asyncio.Event | None = None
        self._worker: asyncio.Task | None = None
        tok = store.tokenizer
        eos = {tok.eos_token_id}
        gen_eos = getattr(store.model.base_model.model.generation_config, "eos_token_id", None)
        eos.update(gen_eos if isinstance(gen_eos, list) else [gen_eos])
        im_end = tok.convert_tokens_to_ids("<|im_end|>")
        if isinstance(im_end, int) and im_end != tok.unk_token_id:
            eos.add(im_end)
        self.eos_ids = {i for i in eos if i is not None}
        self.stats = {"batches": 0, "rows": 0, "prompt_tokens": 0, "completion_tokens": 0, "busy_s": 0.0,
                      "largest_batch": 0}

    # ---- event-loop side ------------------------------------------------------------------------------
    async def generate(self, requests: Sequence[GenerationRequest]) -> list[list[GenerationResult]]:
        loop = asyncio.get_running_loop()
        if self._worker is None or self._worker.done():
            self._wakeup = asyncio.Event()
            self._worker = loop.create_task(self._work(), name="transformers-batcher")
        groups: list[list[asyncio.Future]] = []
        for req in requests:
            futures = []
            for i in range(req.n):
                seed = secrets.randbits(62) if req.seed is None else req.seed + i
                row = _Row(req.model, list(req.prompt_token_ids), req.max_tokens, req.temperature, req.top_p,
                           seed, list(req.stop), loop.create_future())
                self._pending.append(row)
                futures.append(row.future)
            groups.append(futures)
        assert self._wakeup is not None
        self._wakeup.set()
        return [list(await asyncio.gather(*futures)) for futures in groups]

    def health(self) -> dict[str, Any]:
        return {**self.stats, "queued_rows": len(self._pending), "max_batch": self.max_batch}

    async def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()

    async def _work(self) -> None:
        assert self._wakeup is not None
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            await asyncio.sleep(self.gather_s)  # let a burst of concurrent requests land in one batch
            while self._pending:
                batch = self._take_batch()
                if not batch:
                    continue
                try:
                    async with self.store.generating():
                        results = await asyncio.to_thread(self._run_batch, batch)
                except Exception as exc:  # noqa: BLE001 - handed to every waiting request
                    if not isinstance(exc, LookupError):
                        log.exception("generation batch failed")
                    for row in batch:
                        if not row.future.done():
                            row.future.set_exception(exc)
                    continue
                for row, result in zip(batch, results):
                    if not row.future.done():  # the client may have gone away
                        row.future.set_result(result)

    def _take_batch(self) -> list[_Row]:
        """All pending rows for the first row's model, up to max_batch; the rest keep their order."""
        model = self._pending[0].model
        batch, rest = [], deque()
        while self._pending:
            row = self._pending.popleft()
            if row.future.done():  # cancelled before it ran
                continue
            (batch if row.model == model and len(batch) < self.max_batch else rest).append(row)
        self._pending.extendleft(reversed(rest))
        return batch

    # ---- worker-thread side ---------------------------------------------------------------------------
    def _run_batch(self, rows: list[_Row]) -> list[GenerationResult]:
        started = time.perf_counter()
        with torch.inference_mode():
            adapter = self.store.resolve_adapter(rows[0].model)
            with self.store.use_adapter(adapter) as model:
                results = self._sample(model, rows)
        self.stats["batches"] += 1
        self.stats["rows"] += len(rows)
        self.stats["largest_batch"] = max(self.stats["largest_batch"], len(rows))
        self.stats["prompt_tokens"] += sum(len(r.prompt) for r in rows)
        self.stats["completion_tokens"] += sum(len(r.token_ids) for r in results)
        self.stats["busy_s"] += time.perf_counter() - started
        return results

    def _sample(self, model: torch.nn.Module, rows: list[_Row]) -> list[GenerationResult]:
        tok, dev = self.store.tokenizer, self.store.device
        n, width = len(rows), max(len(r.prompt) for r in rows)
        ids = torch.full((n, width), tok.pad_token_id, dtype=torch.long)
        mask = torch.zeros((n, width), dtype=torch.long)
        for i, r in enumerate(rows):  # left padding: every row's next token sits in the last column
            ids[i, width - len(r.prompt):] = torch.tensor(r.prompt)
            mask[i, width - len(r.prompt):] = 1
        ids, mask = ids.to(dev), mask.to(dev)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache()
        out = model(input_ids=ids, attention_mask=mask, position_ids=pos, past_key_values=cache, use_cache=True,
                    logits_to_keep=1)
        next_pos = pos[:, -1:] + 1

        gens = [torch.Generator(device=dev).manual_seed(r.seed) for r in rows]
        temps = torch.tensor([r.temperature for r in rows], device=dev)
        top_ps = torch.tensor([r.top_p for r in rows], device=dev)
        token_ids: list[list[int]] = [[] for _ in rows]
        logprobs: list[list[float]] = [[] for _ in rows]
        finish: list[str | None] = [None] * n
        cut: list[int | None] = [None] * n  # text offset of a matched stop string
        alive = list(range(n))  # original row index of each row still in the batch / cache

        while alive:
            logits = out.logits[:, -1, :].float()
            raw_logp = torch.log_softmax(logits, dim=-1)
            chosen = _sample_tokens(logits, temps[alive], top_ps[alive], [gens[i] for i in alive])
            chosen_logp = raw_logp.gather(1, chosen[:, None])[:, 0]
            keep: list[int] = []
            for j, (tid, lp) in enumerate(zip(chosen.tolist(), chosen_logp.tolist())):
                i = alive[j]
                token_ids[i].append(tid)
                logprobs[i].append(lp)
                if tid in self.eos_ids:
                    finish[i] = "stop"
                elif rows[i].stop and (hit := self._find_stop(token_ids[i], rows[i].stop)) is not None:
                    finish[i], cut[i] = "stop", hit
                elif len(token_ids[i]) >= rows[i].max_tokens:
                    finish[i] = "length"
                else:
                    keep.append(j)
            if not keep:
                break
            if len(keep) < len(alive):  # drop finished rows from the cache rather than padding them along
                sel = torch.tensor(keep, device=dev)
                cache.batch_select_indices(sel)
                mask, next_pos, chosen = mask[sel], next_pos[sel], chosen[sel]
                alive = [alive[j] for j in keep]
            mask = torch.cat([mask, mask.new_ones((len(alive), 1))], dim=1)
            out = model(input_ids=chosen[:, None], attention_mask=mask, position_ids=next_pos,
                        past_key_values=cache, use_cache=True)
            next_pos = next_pos + 1

        results = []
        for i in range(n):
            text = tok.decode(token_ids[i], skip_special_tokens=True)
            if cut[i] is not None:
                text = text[: cut[i]]
            results.append(GenerationResult(token_ids[i], logprobs[i], text, finish[i] or "length"))
        return results

    def _find_stop(self, ids: list[int], stops: list[str]) -> int | None:
        """Offset of the earliest stop string in the decoded text, looking only where the last token could
        have completed one."""
        text = self.store.tokenizer.decode(ids, skip_special_tokens=True)
        tail_start = max(0, len(text) - max(len(s) for s in stops) - 16)
        hits = [p for s in stops if s and (p := text.find(s, tail_start)) != -1]
        return min(hits) if hits else None


def _sample_tokens(logits: torch.Tensor, temps: torch.Tensor, top_ps: torch.Tensor,
                   gens: list[torch.Generator]) -> torch.Tensor:
    """One token per row: greedy where temperature is 0, else nucleus sampling with the row's generator."""
    greedy = logits.argmax(dim=-1)
    sampled_rows = (temps > 0).nonzero()[:, 0].tolist()
    if not sampled_rows:
        return greedy
    probs = torch.softmax(logits / temps.clamp(min=1e-5)[:, None], dim=-1)
    if bool((top_ps < 1).any()):
        sorted_p, order = probs.sort(dim=-1, descending=True)
        # Keep the smallest prefix whose mass reaches top_p (the top token always stays).
        drop = (sorted_p.cumsum(-1) - sorted_p) >= top_ps[:, None]
        sorted_p = sorted_p.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter(1, order, sorted_p)
    out = greedy.clone()
    for r in sampled_rows:  # per-row generator: a row's samples depend only on its own seed
        out[r] = torch.multinomial(probs[r], 1, generator=gens[r])[0]
    return out
