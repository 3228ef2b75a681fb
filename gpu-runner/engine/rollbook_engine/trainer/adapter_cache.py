"""The run's adapter and optimizer, cached between steps.

Each run that trains keeps a `train:<run>` LoRA and its AdamW in memory (`RunState`), so the next step
continues without reading the checkpoint back. When the cached state is missing or out of date (a restart,
a failed step, an eviction) `ensure_state` rebuilds it exactly: from the run's spill when it has one for its
step, else from its newest checkpoint (optimizer state included), or for a fork's first step from the parent
run's checkpoint. Its memory is accounted in the store's ledger (tenancy.py), which evicts it under pressure.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

import torch
from peft import LoraConfig
from peft.utils import get_peft_model_state_dict, set_peft_model_state_dict

from ..contracts.train import TrainerConfig, TrainRequest
from . import checkpoints as ck
from . import tenancy
from ..identifiers import is_identifier, rule
from .errors import StepConflict, TrainFailure
from .step_checks import init_source, lora_mismatch

ADAPTER_PREFIX = "train:"


def adapter_name(run_id: str) -> str:
    name = ADAPTER_PREFIX + run_id
    # PEFT module keys are built from it: only a name of the shared grammar (contracts/identifiers.json), which
    # the run id was checked against at the door (step_checks.valid_run_id); this is the last line behind it.
    if not is_identifier("adapter_key", name):
        raise ValueError(f"run_id: must be {rule('run_id')}")
    return name


@dataclass
class RunState:
    adapter: str
    params: list[tuple[str, torch.nn.Parameter]]
    optimizer: torch.optim.AdamW
    step: int  # the checkpoint step this in-memory adapter and optimizer equal
    # The files of checkpoint `step` as this engine wrote/read them (tenancy.fingerprint); None when the state
    # came from a spill, i.e. it may differ from what is on disk and must be spilled again if evicted.
    on_disk: tuple | None = None


_states: weakref.WeakKeyDictionary[object, dict[str, RunState]] = weakref.WeakKeyDictionary()
_states_lock = threading.Lock()


def run_states(store) -> dict[str, RunState]:
    with _states_lock:
        return _states.setdefault(store, {})


def _lora_config(store, cfg: TrainerConfig) -> LoraConfig:
    return LoraConfig(
        r=cfg.lora_rank,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=list(cfg.lora_target_modules),
        bias="none",
        task_type="CAUSAL_LM",
        base_model_name_or_path=store.base_model_name,
    )


def _adapter_params(model, name: str) -> list[tuple[str, torch.nn.Parameter]]:
    # PEFT names LoRA weights "...q_proj.lora_A.<adapter>.weight"; sorted so optimizer indices are stable.
    token = f".{name}."
    return sorted(((n, p) for n, p in model.named_parameters() if token in n), key=lambda x: x[0])


def _drop_adapter(model, name: str) -> None:
    if name not in model.peft_config:
        return
    if model.active_adapter == name:
        others = [a for a in model.peft_config if a != name]
        if not others:
            raise RuntimeError(f"cannot remove {name}: it is the model's only adapter")
        # The placeholder when there is one: set_adapter makes the new active adapter trainable.
        model.set_adapter(next((a for a in others if not a.startswith(ADAPTER_PREFIX)), others[0]))
    model.delete_adapter(name)


def _new_optimizer(params, cfg: TrainerConfig) -> torch.optim.AdamW:
    return torch.optim.AdamW(
        [p for _, p in params],
        lr=cfg.learning_rate,
        betas=(cfg.adam_beta1, cfg.adam_beta2),
        weight_decay=cfg.weight_decay,
        eps=1e-8,
    )


def _apply_hyperparams(opt: torch.optim.AdamW, cfg: TrainerConfig) -> None:
    # A resumed optimizer keeps its moments but takes this request's hyper-parameters.
    for group in opt.param_groups:
        group["lr"] = cfg.learning_rate
        group["betas"] = (cfg.adam_beta1, cfg.adam_beta2)
        group["weight_decay"] = cfg.weight_decay



def _check_lora_matches(saved: dict, cfg: TrainerConfig, ckpt: Path) -> None:
    """Shape-defining LoRA settings cannot change mid-run; lr, betas, loss etc. can."""
    if (m := lora_mismatch(saved, cfg)) is not None:
        field, old, new = m
        raise StepConflict(f"config.{field}: checkpoint {ckpt.name} was trained with {old}, the request has {new}")


def ensure_state(store, req: TrainRequest) -> RunState:
    """The run's trainable adapter + optimizer equal to the newest checkpoint (or fresh at step 1)."""
    model = store.model
    name = adapter_name(req.run_id)
    states = run_states(store)
    newest = req.step - 1
    state = states.get(req.run_id)
    if state is not None and state.step == newest and name in model.peft_config:
        _check_lora_matches(model.peft_config[name].to_dict(), req.config, Path(f"{newest:04d}"))
        _apply_hyperparams(state.optimizer, req.config)
        store.ledger.pin(name)  # a step is using it: never evicted until _train_step_locked unpins
        return state
    forget_run(store, req.run_id)  # out of date (or absent): its memory goes before the new state's

    ckpt = store.checkpoint_dir(req.run_id, newest) if newest > 0 else None
    # The optimizer state comes with the adapter when it is this run's own checkpoint (resume: exact
    # continuation). A fork (init_from) is a new run: it takes the parent's adapter weights, and AdamW's
    # moments only when the caller asks (load_optimizer), since they describe the parent's gradient history.
    load_optimizer = ckpt is not None
    if ckpt is None and req.init_from is not None and (src := init_source(store, req)) is not None:
        ckpt, load_optimizer = src, req.init_from.load_optimizer
    saved_cfg = saved_weights = spilled_optimizer = None
    # An evicted state that differed from its checkpoint was spilled: it is what this run continues from.
    spill = tenancy.read_spill(store, req.run_id, newest) if newest > 0 else None
    if spill is not None:
        saved_cfg, saved_weights, spilled_optimizer = spill
        _check_lora_matches(saved_cfg, req.config, tenancy.spill_dir(store, req.run_id))
    elif ckpt is not None:
        saved_cfg, saved_weights = ck.read_adapter(ckpt)
        _check_lora_matches(saved_cfg, req.config, ckpt)
    optimizer_state = spilled_optimizer
    if optimizer_state is None and load_optimizer and ckpt is not None:  # load_optimizer comes only with a checkpoint
        optimizer_state = ck.read_optimizer(ckpt)
    own_ckpt = spill is None and newest > 0
    state = build_state(store, req.run_id, req.config, saved_weights, optimizer_state, newest,
                        on_disk=tenancy.fingerprint(Path(ckpt)) if own_ckpt and ckpt is not None else None,
                        source=str(ckpt))
    if newest > 0:
        tenancy.note_restored(store, req.run_id, "spill" if spill is not None else "checkpoint")
    return state


def build_state(store, run_id: str, cfg: TrainerConfig, saved_weights: dict[str, torch.Tensor] | None,
                optimizer_state: dict | None, step: int, on_disk: tuple | None, source: str = "") -> RunState:
    """Add the run's `train:<run>` adapter (its memory reserved in the ledger first, and PINNED: the caller
    unpins when its work is done) with `saved_weights` (None: a fresh LoRA, B = 0) and an AdamW with
    `optimizer_state` (None: fresh), and cache it as the run's state. Shared by /train (ensure_state) and the
    Tinker door (tinker/state.py), so both build, account and evict a run's state the same way."""
    model = store.model
    name = adapter_name(run_id)
    # Room in the memory budget first (evicting least recently used runs), then allocate.
    store.ledger.reserve(
        name, "train",
        tenancy.estimate_state_bytes(model.get_base_model(), cfg.lora_rank, cfg.lora_target_modules),
        evict=lambda: _evict_state(store, run_id), pin=True,
    )
    # autocast_adapter_dtype keeps LoRA weights in fp32 on a bf16 base: fp32 master weights for AdamW.
    # Its random LoRA init is overwritten when weights are loaded: then it must not consume the step's RNG
    # stream (seeded before), or a restored run would draw other dropout masks than one kept in memory.
    rng = torch.random.fork_rng(devices=[store.device] if store.device.type == "cuda" else [])
    with rng if saved_weights is not None else contextlib.nullcontext():
        model.add_adapter(name, _lora_config(store, cfg), autocast_adapter_dtype=True)
    params = _adapter_params(model, name)
    for _, p in params:
        p.data = p.data.float()
    if saved_weights is not None:
        result = set_peft_model_state_dict(model, saved_weights, adapter_name=name)
        unexpected = [k for k in result.unexpected_keys if name in k or "lora" in k]
        if unexpected:
            raise TrainFailure(f"checkpoint {source} has weights this adapter lacks: {unexpected[:3]}")
    optimizer = _new_optimizer(params, cfg)
    if optimizer_state is not None:
        optimizer.load_state_dict(optimizer_state)
        _apply_hyperparams(optimizer, cfg)
    state = RunState(adapter=name, params=params, optimizer=optimizer, step=step, on_disk=on_disk)
    run_states(store)[run_id] = state
    store.ledger.resize(name, tenancy.state_bytes(params, optimizer))
    return state


def _evict_state(store, run_id: str) -> None:
    """The ledger's eviction of a run's training state (under the model lock, never while its step runs):
    spill it when it is not what its newest checkpoint holds, then delete the adapter so its memory is freed."""
    state = run_states(store).get(run_id)
    if state is None:
        return
    if not tenancy.equals_newest_checkpoint(store, run_id, state.step, state.on_disk):
        tenancy.write_spill(
            store, run_id, state.step,
            get_peft_model_state_dict(store.model, adapter_name=state.adapter, save_embedding_layers=False),
            store.model.peft_config[state.adapter].to_dict(),
            state.optimizer.state_dict(),
        )
        store.ledger.spills += 1
    run_states(store).pop(run_id, None)
    _drop_adapter(store.model, state.adapter)
    tenancy.mark_evicted(store, run_id)


def forget_run(store, run_id: str) -> None:
    """Drop the cached adapter/optimizer (after a failure, or when a run is deleted); the next step reloads
    (from the run's spill if it has one for its step, else from its newest checkpoint)."""
    state = run_states(store).pop(run_id, None)
    store.ledger.release(adapter_name(run_id))
    if state is not None:
        with contextlib.suppress(Exception):  # the next ensure_state replaces it anyway
            _drop_adapter(store.model, state.adapter)

