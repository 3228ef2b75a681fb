"""save and load: a Tinker run's checkpoints are /train's (checkpoints.py's format and folder), so inference
serves `<run>@<step>` and GET /runs/{run}/checkpoints lists them exactly like a trained step's.

save writes checkpoints/<step:04d> at the run's current step, adapter and optimizer together whatever the kind
(sampler or state: one format), with "source": "tinker" in trainer_state.json. Saving again at the same step
answers the checkpoint already there when it holds these very weights (its files are the ones this engine
wrote or read: tenancy.fingerprint); a checkpoint of that step from another history of the run (a /train step,
or a save before a load rewound the run) is refused (409), never overwritten. Pending gradients are not saved.
load replaces the run's adapter by a checkpoint's (optimizer too when asked): its pending gradients go, its
step becomes the checkpoint's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from peft.utils import get_peft_model_state_dict

from ..contracts.tinker import TinkerLoadRequest, TinkerLoadResponse, TinkerSaveRequest, TinkerSaveResponse
from ..trainer import checkpoints as ck
from ..trainer import tenancy
from ..trainer.adapter_cache import build_state, forget_run
from ..trainer.batch import BadRequest
from ..trainer.errors import StepConflict
from ..trainer.step_checks import RUN_ID_RULE, same_model, valid_run_id
from ..trainer.trainer import _saved_config
from .checks import check_target
from .locked import model_locked
from .session import Origin, Session, remember
from .state import release_pin, training_state


def save_sync(store, req: TinkerSaveRequest) -> TinkerSaveResponse:
    with model_locked(store):
        check_target(store, req)
        session, state = training_state(store, req)
        try:
            response = _save_locked(store, req, session, state)
        finally:
            release_pin(store, req.run_id)
    # Outside the model lock: invalidate_run flushes stale inference adapters only when it can take it.
    store.invalidate_run(req.run_id)
    return response


def _save_locked(store, req: TinkerSaveRequest, session: Session, state) -> TinkerSaveResponse:
    step = session.step
    if step == 0:
        return TinkerSaveResponse(step=0, checkpoint=None)  # LoRA B = 0: the base model, nothing to serve
    folder = Path(store.checkpoint_dir(req.run_id, step))
    if (folder / ck.STATE).is_file():
        if state.on_disk is not None and tenancy.fingerprint(folder) == state.on_disk:
            existing = next(c for c in ck.list_checkpoints(store, req.run_id) if c.step == step)
            return TinkerSaveResponse(step=step, checkpoint=existing)
        raise StepConflict(
            f"run {req.run_id!r} already has a checkpoint {step:04d} holding other weights (another history of the "
            "run: a /train step, or a save before a load went back); it is never overwritten: save under a new run id")
    ck.sweep_temp(store, req.run_id)
    cfg = session.config()
    lineage = session.loaded_from
    info = ck.write_checkpoint(
        folder,
        # save_embedding_layers=False: "auto" looks the base model up on the hub; LoRA never touches embeddings.
        get_peft_model_state_dict(store.model, adapter_name=state.adapter, save_embedding_layers=False),
        _saved_config(store.model.peft_config[state.adapter]),
        state.optimizer.state_dict(),
        {
            "run_id": req.run_id,
            "step": step,
            "seed": req.seed,
            "base_model": store.base_model_name,
            "source": "tinker",
            "kind": req.kind,
            "config": {k: v for k, v in cfg.model_dump().items() if k.startswith("lora_")},
            # Lineage, in /train's init_from shape: the checkpoint this run was last loaded from (null: fresh LoRA).
            "init_from": None if lineage is None else {"run_id": lineage.run_id, "step": lineage.step,
                                                       "load_optimizer": lineage.with_optimizer},
            "saved_at": datetime.now(UTC).isoformat(),
        },
    )
    state.on_disk = tenancy.fingerprint(folder)
    session.origin = Origin(req.run_id, step, with_optimizer=True)
    tenancy.discard_spill(store, req.run_id)  # the checkpoint holds the same state
    remember(store, session)
    return TinkerSaveResponse(step=step, checkpoint=info)


def check_load(store, req: TinkerLoadRequest) -> Path:
    """The source checkpoint, checked (ownership is the route's: it has the request's workspace)."""
    check_target(store, req)
    if not valid_run_id(req.source_run_id):
        raise BadRequest("source_run_id", f"must be {RUN_ID_RULE}")
    folder = Path(store.checkpoint_dir(req.source_run_id, req.step))
    if not (folder / ck.STATE).is_file() or not (folder / ck.ADAPTER_CONFIG).is_file():
        raise BadRequest("step", f"run '{req.source_run_id}' has no checkpoint for step {req.step}", 404)
    trained_on = ck.read_state(folder).get("base_model", "")
    if not same_model(trained_on, store.base_model_name):
        raise BadRequest("source_run_id", f"checkpoint {req.source_run_id}@{req.step} was trained on {trained_on!r}; "
                         f"this engine serves {store.base_model_name!r}", 400)
    saved, _ = ck.read_adapter(folder)
    if saved.get("r") != req.lora_rank:
        raise BadRequest("lora_rank", f"checkpoint {req.source_run_id}@{req.step} is a LoRA of rank {saved.get('r')}, "
                         f"the request has {req.lora_rank}", 400)
    return folder


def load_sync(store, req: TinkerLoadRequest) -> TinkerLoadResponse:
    with model_locked(store):
        folder = check_load(store, req)
        saved_cfg, weights = ck.read_adapter(folder)
        optimizer = ck.read_optimizer(folder) if req.with_optimizer else None
        # The checkpoint's own LoRA shape (a /train checkpoint may have another alpha or targets than Tinker's default).
        session = Session(run_id=req.run_id, lora_rank=req.lora_rank, lora_alpha=float(saved_cfg.get("lora_alpha", 2 * req.lora_rank)),
                          target_modules=sorted(saved_cfg.get("target_modules") or []), step=req.step)
        origin = Origin(req.source_run_id, req.step, req.with_optimizer)
        session.origin = session.loaded_from = origin
        forget_run(store, req.run_id)  # its adapter, optimizer and pending gradients: replaced
        tenancy.discard_spill(store, req.run_id)
        own = req.source_run_id == req.run_id and req.with_optimizer
        try:
            session.state = build_state(store, req.run_id, session.config(), weights, optimizer, req.step,
                                        on_disk=tenancy.fingerprint(folder) if own else None, source=str(folder))
        finally:
            release_pin(store, req.run_id)
        remember(store, session)
    store.invalidate_run(req.run_id)
    return TinkerLoadResponse(step=req.step)
