"""Batched sampling on the store's PeftModel with plain transformers (CPU or CUDA).

Concurrent requests are expanded into rows (one per sample of `n`) and queued. A single worker takes every
pending row for the same model (base or one checkpoint adapter), up to `max_batch`, after a few-ms gather
window, and runs one left-padded sampling loop over them with a KV cache. Rows leave the batch (and the
cache) as they finish and their result is returned at once; rows for the same model that arrive meanwhile
join the running batch between decode steps (their prefill is spliced into the cache), unless a trainer
is waiting for exclusive() (ROLLBOOK_JOIN_INFLIGHT=0 turns joining off).

Our own loop rather than `generate()`: per-row temperature / top_p / seed / stop / max_tokens, and the exact
logprob of each sampled token under the raw (temperature-1) distribution, see backends/base.py.

Streaming rows hand each token to the event loop as it is sampled (call_soon_threadsafe, so the server's
callbacks run on the loop, in order, before the row's result). A cancelled request (its client went away)
marks its rows `cancelled`: they leave the pending queue at once and a running batch at the next decode step.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from ..model_store import ModelStore
from .base import GenerationRequest, GenerationResult, SampledToken

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
    top_logprobs: int = 0
    on_token: Callable[[SampledToken], None] | None = None  # called on the event loop
    on_finish: Callable[[GenerationResult], None] | None = None  # called on the event loop
    delivered: bool = False  # its result is on the way to the future (set from the worker thread)
    cancelled: bool = False  # nobody waits for it any more (set on the event loop, read by the worker)


class TransformersBackend:
    name = "transformers"

    def __init__(self, store: ModelStore, max_batch: int | None = None, gather_ms: float | None = None) -> None:
        self.store = store
        self.max_batch = max_batch or int(os.environ.get("ROLLBOOK_MAX_BATCH", "32"))
        self.gather_s = (gather_ms if gather_ms is not None else float(os.environ.get("ROLLBOOK_GATHER_MS", "5"))) / 1000
        self._pending: deque[_Row] = deque()
        self._plock = threading.Lock()  # _pending is read by the worker thread too (rows joining a batch)
        # Continuous batching: rows for the running batch's model join it between decode steps.
        self.join_inflight = os.environ.get("ROLLBOOK_JOIN_INFLIGHT", "1") != "0"
        self._wakeup: asyncio.Event | None = None
        self._worker: asyncio.Task | None = None
        self.eos_ids = store.eos_token_ids
        # running_rows: rows in the batch being sampled now; cancelled_rows: rows dropped for a gone client.
        self.stats = {"batches": 0, "rows": 0, "prompt_tokens": 0, "completion_tokens": 0, "busy_s": 0.0,
                      "largest_batch": 0, "joined_rows": 0, "running_rows": 0, "cancelled_rows": 0}

    # ---- event-loop side ------------------------------------------------------------------------------
    async def generate(self, requests: Sequence[GenerationRequest]) -> list[list[GenerationResult]]:
        loop = asyncio.get_running_loop()
        if self._worker is None or self._worker.done():
            self._wakeup = asyncio.Event()
            self._worker = loop.create_task(self._work(), name="transformers-batcher")
        groups: list[list[asyncio.Future]] = []
        with self._plock:
            for req in requests:
                futures = []
                for i in range(req.n):
                    seed = secrets.randbits(62) if req.seed is None else req.seed + i
                    row = _Row(req.model, list(req.prompt_token_ids), req.max_tokens, req.temperature, req.top_p,
                               seed, list(req.stop), loop.create_future(), req.top_logprobs,
                               _bind(req.on_token, i), _bind(req.on_finish, i))
                    row.future.add_done_callback(lambda f, row=row: self._forget_if_cancelled(row, f))
                    self._pending.append(row)
                    futures.append(row.future)
                groups.append(futures)
        assert self._wakeup is not None
        self._wakeup.set()
        # One gather over every row: cancelling this call (the client went away) cancels all of its futures.
        flat = await asyncio.gather(*[f for futures in groups for f in futures])
        out, at = [], 0
        for futures in groups:
            out.append(list(flat[at:at + len(futures)]))
            at += len(futures)
        return out

    def _forget_if_cancelled(self, row: _Row, future: asyncio.Future) -> None:
        if not future.cancelled():
            return
        row.cancelled = True  # a running batch drops it at its next decode step
        with self._plock:
            try:
                self._pending.remove(row)
            except ValueError:
                return  # already taken into a batch
        self.stats["cancelled_rows"] += 1

    def health(self) -> dict[str, Any]:
        return {**self.stats, "queued_rows": len(self._pending), "max_batch": self.max_batch}

    async def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()

    async def _work(self) -> None:
        assert self._wakeup is not None
        loop = asyncio.get_running_loop()
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            await asyncio.sleep(self.gather_s)  # let a burst of concurrent requests land in one batch
            while self._pending:
                async with self.store.generating():
                    batch = self._take(None, self.max_batch)
                    if not batch:
                        continue
                    try:
                        await asyncio.to_thread(self._run_batch, batch, loop)
                    except Exception as exc:  # noqa: BLE001 - handed to every request still waiting
                        if not isinstance(exc, LookupError):
                            log.exception("generation batch failed")
                        for row in batch:  # batch also holds rows that joined while it ran
                            if not row.delivered and not row.future.done():
                                row.future.set_exception(exc)

    def _take(self, model: str | None, limit: int) -> list[_Row]:
        """Up to `limit` pending rows for `model` (None: the oldest row's model); the rest keep their order.
        Called from the event loop (a new batch) and from the worker thread (rows joining a running batch)."""
        with self._plock:
            batch, rest = [], deque()
            while self._pending:
                row = self._pending.popleft()
                if row.cancelled or row.future.done():  # cancelled before it ran
                    continue
                if model is None:
                    model = row.model
                (batch if row.model == model and len(batch) < limit else rest).append(row)
            self._pending.extendleft(reversed(rest))
            return batch

    # ---- worker-thread side ---------------------------------------------------------------------------
    def _run_batch(self, rows: list[_Row], loop: asyncio.AbstractEventLoop) -> None:
        """Runs `rows` (and rows that join on the way, appended to `rows`), handing each result to its future
        as soon as that row finishes, so short answers do not wait for the batch's longest one."""
        started = time.perf_counter()
        # Counted up front: results reach clients before the batch ends, and /health should agree with them.
        self.stats["batches"] += 1
        self.stats["largest_batch"] = max(self.stats["largest_batch"], len(rows))

        def deliver(row: _Row, result: GenerationResult) -> None:
            self.stats["completion_tokens"] += len(result.token_ids)
            row.delivered = True
            loop.call_soon_threadsafe(_resolve, row, result)

        def emit(row: _Row, token: SampledToken) -> None:
            if row.on_token is not None:
                loop.call_soon_threadsafe(_call_unless_cancelled, row, row.on_token, token)

        # Load the adapter OUTSIDE inference_mode: weights created inside it are inference tensors, and the
        # trainer can no longer make them trainable (requires_grad) for the next step.
        adapter = self.store.resolve_adapter(rows[0].model)
        try:
            with torch.inference_mode():
                with self.store.use_adapter(adapter) as model:
                    self._sample(model, rows, deliver, emit)
        finally:
            self.stats["running_rows"] = 0
            self.stats["busy_s"] += time.perf_counter() - started

    def _prefill(self, model: torch.nn.Module, rows: list[_Row]):
        """Left-padded prefill: every row's next token sits in the last column. Returns the last logits, the
        cache, the attention mask and each row's next position."""
        dev = self.store.device
        self.stats["rows"] += len(rows)
        self.stats["prompt_tokens"] += sum(len(r.prompt) for r in rows)
        width = max(len(r.prompt) for r in rows)
        ids = torch.full((len(rows), width), self.store.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, width - len(r.prompt):] = torch.tensor(r.prompt)
            mask[i, width - len(r.prompt):] = 1
        ids, mask = ids.to(dev), mask.to(dev)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache()
        out = model(input_ids=ids, attention_mask=mask, position_ids=pos, past_key_values=cache, use_cache=True,
                    logits_to_keep=1)
        return out.logits[:, -1, :].float(), cache, mask, pos[:, -1:] + 1

    def _sample(self, model: torch.nn.Module, rows: list[_Row], deliver, emit) -> None:
        tok, dev = self.store.tokenizer, self.store.device
        logits, cache, mask, next_pos = self._prefill(model, rows)
        # Joining a running batch means splicing KV caches; only plain DynamicLayers are spliced safely.
        can_join = self.join_inflight and all(type(layer) is DynamicLayer for layer in cache.layers)
        gens = [torch.Generator(device=dev).manual_seed(r.seed) for r in rows]
        temps = torch.tensor([r.temperature for r in rows], device=dev)
        top_ps = torch.tensor([r.top_p for r in rows], device=dev)
        token_ids: list[list[int]] = [[] for _ in rows]
        logprobs: list[list[float]] = [[] for _ in rows]
        tops: list[list[list[tuple[int, float]]]] = [[] for _ in rows]
        alive = list(range(len(rows)))  # index into `rows` of each row still in the batch / cache

        while alive:
            self.stats["running_rows"] = len(alive)
            room = self.max_batch - len(alive)
            if can_join and room > 0 and self._pending and not self.store.exclusive_pending:
                more = self._take(rows[0].model, room)
                if more:
                    self.stats["joined_rows"] += len(more)
                    new_logits, new_cache, new_mask, new_pos = self._prefill(model, more)
                    mask = _splice(cache, new_cache, mask, new_mask)
                    logits = torch.cat([logits, new_logits])
                    next_pos = torch.cat([next_pos, new_pos])
                    alive += range(len(rows), len(rows) + len(more))
                    rows += more
                    gens += [torch.Generator(device=dev).manual_seed(r.seed) for r in more]
                    temps = torch.cat([temps, torch.tensor([r.temperature for r in more], device=dev)])
                    top_ps = torch.cat([top_ps, torch.tensor([r.top_p for r in more], device=dev)])
                    token_ids += [[] for _ in more]
                    logprobs += [[] for _ in more]
                    tops += [[] for _ in more]
            raw_logp = torch.log_softmax(logits, dim=-1)
            chosen = _sample_tokens(logits, temps[alive], top_ps[alive], [gens[i] for i in alive])
            chosen_logp = raw_logp.gather(1, chosen[:, None])[:, 0]
            k = max(rows[i].top_logprobs for i in alive)
            top_lp, top_ids = (raw_logp.topk(k, dim=-1) if k else (None, None))
            top_lp = top_lp.tolist() if top_lp is not None else None
            top_ids = top_ids.tolist() if top_ids is not None else None
            keep: list[int] = []
            for j, (tid, lp) in enumerate(zip(chosen.tolist(), chosen_logp.tolist())):
                i, row = alive[j], rows[alive[j]]
                if row.cancelled:  # its client went away: leave the batch now, deliver nothing
                    self.stats["cancelled_rows"] += 1
                    continue
                top = list(zip(top_ids[j][:row.top_logprobs], top_lp[j][:row.top_logprobs])) if row.top_logprobs else []
                token_ids[i].append(tid)
                logprobs[i].append(lp)
                tops[i].append(top)
                emit(row, SampledToken(tid, lp, top))
                finish, cut = None, None
                if tid in self.eos_ids:
                    finish = "stop"
                elif row.stop and (cut := self._find_stop(token_ids[i], row.stop)) is not None:
                    finish = "stop"
                elif len(token_ids[i]) >= row.max_tokens:
                    finish = "length"
                if finish is None:
                    keep.append(j)
                    continue
                text = tok.decode(token_ids[i], skip_special_tokens=True)
                deliver(row, GenerationResult(token_ids[i], logprobs[i], text if cut is None else text[:cut], finish,
                                              tops[i] if row.top_logprobs else None))
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
            logits = out.logits[:, -1, :].float()
            next_pos = next_pos + 1

    def _find_stop(self, ids: list[int], stops: list[str]) -> int | None:
        """Offset of the earliest stop string in the decoded text, looking only where the last token could
        have completed one."""
        text = self.store.tokenizer.decode(ids, skip_special_tokens=True)
        tail_start = max(0, len(text) - max(len(s) for s in stops) - 16)
        hits = [p for s in stops if s and (p := text.find(s, tail_start)) != -1]
        return min(hits) if hits else None


def _bind(callback, index: int):
    return None if callback is None else (lambda value: callback(index, value))


def _call_unless_cancelled(row: _Row, callback, value) -> None:
    if not row.cancelled:
        callback(value)


def _resolve(row: _Row, result: GenerationResult) -> None:
    if row.future.done():  # the client went away
        return
    try:
        if row.on_finish is not None:
            row.on_finish(result)
    finally:  # a failing callback must not leave the request waiting forever
        row.future.set_result(result)


def _splice(cache: DynamicCache, new: DynamicCache, mask: torch.Tensor, new_mask: torch.Tensor) -> torch.Tensor:
    """Append `new`'s rows to `cache`, left-padding the shorter side with masked-out zeros; returns the mask."""
    width = max(mask.shape[1], new_mask.shape[1])

    def lpad(t: torch.Tensor, dim: int) -> torch.Tensor:
        short = width - t.shape[dim]
        if short == 0:
            return t
        shape = list(t.shape)
        shape[dim] = short
        return torch.cat([t.new_zeros(shape), t], dim=dim)

    for layer, extra in zip(cache.layers, new.layers):
        layer.keys = torch.cat([lpad(layer.keys, 2), lpad(extra.keys, 2)])
        layer.values = torch.cat([lpad(layer.values, 2), lpad(extra.values, 2)])
    return torch.cat([lpad(mask, 1), lpad(new_mask, 1)])


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
