"""One ledger of the memory that per-run state takes on the shared model, under one budget.

Two kinds of entries, keyed by their PEFT adapter name:
- `train:<run>`: the trainer's LoRA of a run with its gradients and AdamW moments (trainer/tenancy.py),
- `ckpt:<run>@<step>`: a checkpoint loaded for serving (model_store.resolve_adapter).
Before anything new is allocated its owner reserves its bytes here; the least recently used entries that are
not pinned (a step is using them) are evicted first until the new one fits, so the sum of the entries never
exceeds the budget. Each entry carries its own `evict` callback: the owner knows how to free it (a training
state may have to be spilled to disk first, a serving adapter is simply deleted and reloaded on next use).

Why hand-written: the LRU order is an OrderedDict, the rest is bookkeeping that must call back into PEFT
under the store's model lock; cachetools' size-aware caches evict silently (no pinning, no callback that may
refuse), which is exactly what this must not do.

Callers hold `store._model_lock` (the trainer for its whole step, resolve_adapter while it loads), so the
PEFT changes that evictions make never run under a forward pass. The internal lock only keeps `snapshot()`
(read by /tenants from the event loop) consistent.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

MB = 1024 * 1024


class OverBudget(RuntimeError):
    """One entry alone is larger than the budget (or everything else is pinned): it cannot be admitted."""


@dataclass
class _Entry:
    kind: str  # "train" | "serve"
    bytes: int
    evict: Callable[[], None]
    pins: int = 0
    last_used: float = field(default_factory=time.time)


class AdapterLedger:
    def __init__(self, budget_bytes: int) -> None:
        if budget_bytes <= 0:
            raise ValueError("budget_bytes must be positive")
        self.budget_bytes = budget_bytes
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # LRU first
        self._lock = threading.RLock()
        self.peak_bytes = 0
        self.evictions = {"train": 0, "serve": 0}
        self.spills = 0  # training states written to disk on eviction (not equal to their checkpoint)
        self.restores = {"checkpoint": 0, "spill": 0}  # evicted training states brought back

    # ---- queries --------------------------------------------------------------------------------------
    @property
    def used_bytes(self) -> int:
        with self._lock:
            return sum(e.bytes for e in self._entries.values())

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._entries

    def snapshot(self) -> dict:
        with self._lock:
            entries = [
                {"adapter": k, "kind": e.kind, "bytes": e.bytes, "pinned": e.pins > 0, "last_used": e.last_used}
                for k, e in reversed(self._entries.items())  # most recently used first
            ]
            return {
                "budget_bytes": self.budget_bytes,
                "used_bytes": sum(e["bytes"] for e in entries),
                "peak_bytes": self.peak_bytes,
                "resident": entries,
                "evictions": dict(self.evictions),
                "spills": self.spills,
                "restores": dict(self.restores),
            }

    # ---- changes --------------------------------------------------------------------------------------
    def reserve(self, key: str, kind: str, nbytes: int, evict: Callable[[], None], pin: bool = False) -> None:
        """Make room for `key` (evicting LRU unpinned entries) and record it; raises OverBudget if it cannot fit.

        Call BEFORE allocating, so memory never goes over the budget even while the new entry is built."""
        with self._lock:
            old = self._entries.pop(key, None)
            pins = (old.pins if old else 0) + (1 if pin else 0)
            self._make_room(nbytes, exclude=key, total=nbytes)
            self._entries[key] = _Entry(kind=kind, bytes=nbytes, evict=evict, pins=pins)
            self._note_peak()

    def resize(self, key: str, nbytes: int) -> None:
        """The entry's measured size (after it was built or grew); evicts others if it grew past the budget."""
        with self._lock:
            entry = self._entries[key]
            if nbytes > entry.bytes:
                self._make_room(nbytes - entry.bytes, exclude=key, total=nbytes)
            entry.bytes = nbytes
            self._note_peak()

    def touch(self, key: str) -> None:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                self._entries[key].last_used = time.time()

    def pin(self, key: str) -> None:
        with self._lock:
            if key not in self._entries:  # released meanwhile: nothing resident to protect
                return
            self._entries[key].pins += 1
            self._entries.move_to_end(key)
            self._entries[key].last_used = time.time()

    def unpin(self, key: str) -> None:
        with self._lock:
            if key in self._entries:
                self._entries[key].pins = max(0, self._entries[key].pins - 1)

    def release(self, key: str) -> None:
        """The owner freed the entry itself (deleted adapter, failed step): forget it without calling evict."""
        with self._lock:
            self._entries.pop(key, None)

    def evict(self, key: str) -> None:
        """Evict one entry now through its callback (it must not be pinned)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return
            if entry.pins:
                raise RuntimeError(f"{key} is in use and cannot be evicted")
            entry.evict()  # may raise (e.g. a spill that cannot be written): the entry then stays resident
            self._entries.pop(key, None)
            self.evictions[entry.kind] += 1

    # ---- internals ------------------------------------------------------------------------------------
    def _used_locked(self) -> int:
        return sum(e.bytes for e in self._entries.values())

    def _note_peak(self) -> None:
        self.peak_bytes = max(self.peak_bytes, self._used_locked())

    def _make_room(self, extra: int, exclude: str, total: int) -> None:
        """Evict LRU unpinned entries (never `exclude`) until `extra` more bytes fit; `total`: the entry's size."""
        if total > self.budget_bytes:
            raise OverBudget(
                f"{exclude} needs {total / MB:.1f} MB but ROLLBOOK_ADAPTER_MEMORY_MB allows "
                f"{self.budget_bytes / MB:.1f} MB for all runs' adapters: raise it or use a smaller LoRA"
            )
        for key in list(self._entries):
            if self._used_locked() + extra <= self.budget_bytes:
                return
            entry = self._entries.get(key)  # an eviction may have released others (flushed deletes)
            if entry is None or key == exclude or entry.pins:
                continue
            self.evict(key)
        if self._used_locked() + extra > self.budget_bytes:
            pinned = [k for k, e in self._entries.items() if e.pins]
            raise OverBudget(
                f"{exclude} needs {total / MB:.1f} MB; {self._used_locked() / MB:.1f} of "
                f"{self.budget_bytes / MB:.1f} MB are held by adapters in use ({', '.join(pinned)})"
            )


def tensor_bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def default_budget_bytes(base_model: torch.nn.Module) -> int:
    """Default budget: as many bytes as the base model's own weights.

    A rank-8 LoRA on every projection with AdamW is ~3-4% of the base in fp32 (params + grads + 2 moments),
    so this holds ~25 runs' training state on SmolLM2-135M and scales with the model on a GPU box."""
    return tensor_bytes(p for p in base_model.parameters())
