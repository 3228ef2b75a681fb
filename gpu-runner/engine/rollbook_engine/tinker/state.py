"""The run's `train:<run>` adapter and AdamW for a Tinker call: the cached one, or one rebuilt exactly.

Runs in the worker thread under the model lock (locked.py). The adapter is adapter_cache's RunState, built by
the same `build_state` /train uses, so the ledger accounts it, pins it for the call (the caller unpins) and may
evict it between calls like any run's state (tenancy.py spills it when it differs from its checkpoint).
What eviction cannot keep is the pending gradient: session.py counts it lost, and optim_step refuses.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..contracts.tinker import TrainingTarget
from ..trainer import checkpoints as ck
from ..trainer import tenancy
from ..trainer.adapter_cache import RunState, adapter_name, build_state, forget_run, run_states
from ..trainer.batch import BadRequest
from ..trainer.errors import StepConflict
from .session import Session, new_session, remember, session_for


def training_state(store, req: TrainingTarget) -> tuple[Session, RunState]:
    """The run's session and its state, pinned in the ledger (unpin with `release_pin`)."""
    session = session_for(store, req.run_id) or new_session(req.run_id, req.lora_rank)
    if session.lora_rank != req.lora_rank:
        raise BadRequest("lora_rank", f"run {req.run_id!r} trains a LoRA of rank {session.lora_rank}, the request "
                         f"has {req.lora_rank}: the rank is fixed when the run's adapter is created", 409)
    state = run_states(store).get(req.run_id)
    name = adapter_name(req.run_id)
    if state is not None and state is session.state and name in store.model.peft_config and state.step == session.step:
        store.ledger.pin(name)  # in use by this call: never evicted until release_pin
        return session, state
    if session.pending_batches:
        # The gradients lived on the state that is gone (another run's state evicted it, or a failed call dropped
        # it): what remains of this step's batches is not their sum, so optim_step will refuse it.
        session.lost_batches += session.pending_batches
        session.drop_pending()
    forget_run(store, req.run_id)  # a stale or foreign (/train's) state of the run: its memory goes first
    session.state = _rebuild(store, session, req.seed)
    remember(store, session)
    return session, session.state


def _rebuild(store, session: Session, seed: int) -> RunState:
    run, step = session.run_id, session.step
    spill = tenancy.read_spill(store, run, step)
    if spill is not None:  # evicted while it differed from every checkpoint: exactly what it was
        _, spilled_weights, spilled_optimizer = spill
        state = build_state(store, run, session.config(), spilled_weights, spilled_optimizer, step, on_disk=None,
                            source="spill")
        tenancy.note_restored(store, run, "spill")
        return state
    if step == 0 and session.origin is None:
        # A fresh LoRA (B = 0: the base model), its A drawn from the request's seed without touching the
        # process's RNG stream (other runs' steps seed their own).
        with torch.random.fork_rng(devices=[store.device] if store.device.type == "cuda" else []):
            torch.manual_seed(seed)
            return build_state(store, run, session.config(), None, None, 0, on_disk=None)
    origin = session.origin
    folder = Path(store.checkpoint_dir(origin.run_id, origin.step)) if origin is not None else None
    if origin is None or origin.step != step or folder is None or not (folder / ck.STATE).is_file():
        raise StepConflict(
            f"run {run!r}: its training state at step {step} is no longer in memory (engine restart) and was never "
            f"saved (newest checkpoint: {ck.newest_step(store, run)}); load a checkpoint (POST /tinker/load) to go on")
    _, weights = ck.read_adapter(folder)
    optimizer = ck.read_optimizer(folder) if origin.with_optimizer else None
    own = origin.run_id == run and origin.with_optimizer  # else the optimizer differs from the checkpoint's
    state = build_state(store, run, session.config(), weights, optimizer, step,
                        on_disk=tenancy.fingerprint(folder) if own else None, source=str(folder))
    tenancy.note_restored(store, run, "checkpoint")
    return state


def release_pin(store, run_id: str) -> None:
    store.ledger.unpin(adapter_name(run_id))
