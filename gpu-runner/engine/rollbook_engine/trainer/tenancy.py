"""Many runs on one engine: the trainer's side of the memory budget, exact restore, and fair turns.

Every run that trains on this engine keeps a `train:<run>` LoRA + AdamW in memory between steps (adapter_cache.py's
`RunState`). Their bytes go into the store's AdapterLedger (adapter_ledger.py) together with the serving
adapters; when a new state does not fit, the least recently used ones that no step is using are evicted:
- if the state equals its newest checkpoint on disk (the usual case: the engine checkpoints every step, and
  the files are unchanged since it wrote or read them: same size, mtime and inode), it is simply dropped;
- otherwise (its checkpoint was removed/rewritten behind its back, or a future engine skips checkpoints) the
  adapter weights and AdamW state are spilled to runs/<run>/.spill/ first (safetensors + torch.save, the same
  formats as a checkpoint, so the round trip is bit-exact).
Either way the PEFT adapter is deleted from the shared model (delete_adapter), and with the optimizer gone no
reference to its tensors remains, so the memory is really freed. The run's next step rebuilds the state from
the spill (when its step is the one the run continues from) or from the newest checkpoint.

Fair turns: all /train requests of all runs wait in ONE first-come-first-served queue (`train_turn`) before
they take `store.exclusive()`. asyncio's Condition (what exclusive() waits on) wakes every waiter and lets
them race for the lock, so without this a request could be overtaken again and again; here each request
gets its turn in the order it arrived, and a run's next step can only arrive after its previous one finished,
so with N runs training each gets one step in every N (round robin) and none starves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import uuid
import weakref
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from ..adapter_ledger import tensor_bytes
from . import checkpoints as ck

SPILL_DIR = ".spill"
_SPILL_META = "spill.json"


# ---- bytes ------------------------------------------------------------------------------------------------


def lora_param_count(base_model: torch.nn.Module, rank: int, targets: list[str]) -> int:
    """Parameters a rank-`rank` LoRA on modules named `targets` adds: r·(in + out) per targeted linear layer."""
    wanted = set(targets)
    total = 0
    for name, module in base_model.named_modules():
        if name.rsplit(".", 1)[-1] in wanted and isinstance(getattr(module, "in_features", None), int):
            total += rank * (module.in_features + module.out_features)
    return total


def estimate_state_bytes(base_model: torch.nn.Module, rank: int, targets: list[str]) -> int:
    """fp32 LoRA weights + a gradient each during a step + AdamW's exp_avg and exp_avg_sq (+ a step scalar
    per tensor, 2 tensors per targeted layer)."""
    n = lora_param_count(base_model, rank, targets)
    layers = sum(1 for name, m in base_model.named_modules()
                 if name.rsplit(".", 1)[-1] in set(targets) and isinstance(getattr(m, "in_features", None), int))
    return 4 * n * 4 + 2 * layers * 4


def state_bytes(params: list[tuple[str, torch.nn.Parameter]], optimizer: torch.optim.Optimizer) -> int:
    """Measured: weights + a gradient per weight (allocated by every step's backward; counted while idle too so
    a resident run never has to grow at its next step) + the optimizer's tensors (before its first update:
    what AdamW will allocate — exp_avg, exp_avg_sq and a float32 step per parameter tensor)."""
    weights = tensor_bytes(p for _, p in params)
    moments = tensor_bytes(t for s in optimizer.state.values() for t in s.values())
    if not optimizer.state:
        moments = 2 * weights + 4 * len(params)
    return 2 * weights + moments


# ---- "does the state equal its newest checkpoint?" ----------------------------------------------------------


def fingerprint(folder: Path) -> tuple | None:
    """(name, size, mtime_ns, inode) of a checkpoint's files: unchanged means the bytes are the ones this engine
    wrote or read. Hashing ~100 MB per eviction would prove the same at a far higher price."""
    try:
        return tuple(
            (n, st.st_size, st.st_mtime_ns, st.st_ino)
            for n in (ck.ADAPTER_WEIGHTS, ck.OPTIMIZER, ck.STATE)
            for st in [os.stat(folder / n)]
        )
    except FileNotFoundError:
        return None


def equals_newest_checkpoint(store, run_id: str, step: int, print_: tuple | None) -> bool:
    if print_ is None or step == 0 or ck.newest_step(store, run_id) != step:
        return False
    return fingerprint(Path(store.checkpoint_dir(run_id, step))) == print_


# ---- spill ------------------------------------------------------------------------------------------------


def spill_dir(store, run_id: str) -> Path:
    return ck.checkpoints_root(store, run_id).parent / SPILL_DIR


def write_spill(store, run_id: str, step: int, adapter_state: dict[str, torch.Tensor], adapter_config: dict,
                optimizer_state: dict) -> Path:
    """Atomically (temp folder + rename) replace the run's spill with this state."""
    final = spill_dir(store, run_id)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f"{SPILL_DIR}-tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        save_file({k: v.detach().to("cpu").contiguous() for k, v in adapter_state.items()}, tmp / ck.ADAPTER_WEIGHTS)
        torch.save(optimizer_state, tmp / ck.OPTIMIZER)
        (tmp / ck.ADAPTER_CONFIG).write_text(json.dumps(adapter_config, default=_jsonable))
        (tmp / _SPILL_META).write_text(json.dumps({"run_id": run_id, "step": step}))  # last: marks it complete
        if final.exists():
            shutil.rmtree(final)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def _jsonable(x):
    return sorted(x) if isinstance(x, set) else str(x)


def read_spill(store, run_id: str, step: int) -> tuple[dict, dict[str, torch.Tensor], dict] | None:
    """(adapter config, adapter weights, optimizer state) of the run's spill if it holds `step`, else None.
    A spill of another step is stale (the run's checkpoints moved on without it) and is removed."""
    folder = spill_dir(store, run_id)
    meta = folder / _SPILL_META
    if not meta.is_file():
        return None
    if json.loads(meta.read_text()).get("step") != step:
        discard_spill(store, run_id)
        return None
    return (
        json.loads((folder / ck.ADAPTER_CONFIG).read_text()),
        load_file(str(folder / ck.ADAPTER_WEIGHTS)),
        torch.load(folder / ck.OPTIMIZER, map_location="cpu", weights_only=True),
    )


def discard_spill(store, run_id: str) -> None:
    shutil.rmtree(spill_dir(store, run_id), ignore_errors=True)


# ---- who was evicted (to count restores) ------------------------------------------------------------------

_evicted: weakref.WeakKeyDictionary[object, set[str]] = weakref.WeakKeyDictionary()


def mark_evicted(store, run_id: str) -> None:
    _evicted.setdefault(store, set()).add(run_id)


def note_restored(store, run_id: str, source: str) -> None:
    """Count a rebuild as a restore when the state had been evicted (not a first step or an engine restart)."""
    gone = _evicted.setdefault(store, set())
    if run_id in gone:
        gone.discard(run_id)
        store.ledger.restores[source] += 1


# ---- fair turns -------------------------------------------------------------------------------------------


class FifoTurns:
    """First come, first served: one holder at a time, the others woken strictly in arrival order.

    Hand-written because asyncio.Lock / Condition make no such promise (a woken waiter can lose the race to a
    newcomer); this is a deque of futures, the next one resolved when the holder leaves."""

    def __init__(self) -> None:
        self._waiting: deque[asyncio.Future] = deque()
        self._busy = False
        self.served = 0

    @property
    def waiting(self) -> int:
        return sum(1 for f in self._waiting if not f.done())

    @property
    def busy(self) -> bool:
        return self._busy

    def _grant(self) -> None:
        while not self._busy and self._waiting:
            fut = self._waiting.popleft()
            if not fut.done():
                self._busy = True
                fut.set_result(None)

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        fut = asyncio.get_running_loop().create_future()
        self._waiting.append(fut)
        self._grant()
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted, then cancelled before it ran: pass the turn on
                self._busy = False
                self._grant()
            raise
        try:
            yield
        finally:
            self.served += 1
            self._busy = False
            self._grant()


_turns: weakref.WeakKeyDictionary[object, tuple[asyncio.AbstractEventLoop, FifoTurns]] = weakref.WeakKeyDictionary()


def train_turns(store) -> FifoTurns:
    """The store's queue, bound to the running loop (tests drive one store from successive asyncio.run loops)."""
    loop = asyncio.get_running_loop()
    held = _turns.get(store)
    if held is None or (held[0] is not loop and not held[1].busy):
        held = (loop, FifoTurns())
        _turns[store] = held
    return held[1]


def turns_snapshot(store) -> dict:
    held = _turns.get(store)
    return {"waiting": held[1].waiting if held else 0, "served": held[1].served if held else 0,
            "busy": held[1].busy if held else False}


def tenants(store) -> dict:
    """What /tenants reports: the ledger (resident runs and serving adapters with their bytes, the budget,
    evictions, spills, restores) and the train queue."""
    return {**store.ledger.snapshot(), "train_queue": turns_snapshot(store)}

