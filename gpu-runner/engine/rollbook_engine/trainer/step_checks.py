"""Checks of a /train request against this engine and the run's checkpoints.

They run before streaming starts (so a refusal is a real HTTP status: 400/404/422 naming the field, or 409)
and again under the lock, where the step itself calls `check_request`.
"""

from __future__ import annotations

import json
import weakref
from pathlib import Path

from ..contracts.train import TrainerConfig, TrainRequest
from ..identifiers import is_identifier, rule
from . import checkpoints as ck
from .batch import BadRequest, validate_sequences
from .errors import StepConflict


def valid_run_id(run_id: str) -> bool:
    """Run ids become folder names and PEFT module keys: the shared grammar (contracts/identifiers.json) has no
    path separators and no dots (PEFT splits keys on "."), and is matched whole (never `$`, which accepts "r\\n")."""
    return is_identifier("run_id", run_id)


RUN_ID_RULE = rule("run_id")


def _same_model(requested: str, served: str) -> bool:
    # "HuggingFaceTB/SmolLM2-135M-Instruct" and "SmolLM2-135M-Instruct" name the same weights.
    return requested == served or requested.rstrip("/").split("/")[-1] == served.rstrip("/").split("/")[-1]


same_model = _same_model  # for the Tinker door's base_model check (tinker/checks.py)


_leaf_names: weakref.WeakKeyDictionary[object, frozenset[str]] = weakref.WeakKeyDictionary()


def _module_leaf_names(model) -> frozenset[str]:
    """The base model's module names, once per model: /train checks them outside the model lock while another
    run's step may add or delete adapters (which would change the module dicts mid-iteration), and adapters
    never add a name a request may target."""
    names = _leaf_names.get(model)
    while names is None:
        try:
            names = frozenset(name.rsplit(".", 1)[-1] for name, _ in model.named_modules())
        except RuntimeError:  # "dictionary changed size during iteration": an adapter came or went; again
            continue
        _leaf_names[model] = names
    return names


def check_request(store, req: TrainRequest) -> None:
    """Raise BadRequest (400/422, naming the field) or StepConflict (409)."""
    if not valid_run_id(req.run_id):
        raise BadRequest("run_id", f"must be {RUN_ID_RULE}")
    if not _same_model(req.base_model, store.base_model_name):
        raise BadRequest("base_model", f"this engine serves {store.base_model_name!r}, not {req.base_model!r}", 400)
    leaves = _module_leaf_names(store.model.get_base_model())
    missing = [t for t in req.config.lora_target_modules if t not in leaves]
    if missing:
        raise BadRequest("config.lora_target_modules", f"no module named {missing} in {store.base_model_name}", 400)
    vocab = store.model.get_base_model().get_input_embeddings().num_embeddings
    validate_sequences(req, vocab, store.max_context_tokens)
    newest = ck.newest_step(store, req.run_id)
    if req.step != newest + 1:
        raise StepConflict(
            f"step {req.step} requested but the newest checkpoint of run {req.run_id!r} is step {newest} "
            f"({'none' if newest == 0 else f'{newest:04d}'}): the next step must be {newest + 1}"
        )
    if newest == 0 and req.init_from is not None:
        _check_init_from(store, req)


def init_source(store, req: TrainRequest) -> Path | None:
    """The checkpoint a fork starts from, or None. Only a run with no checkpoint of its own reads init_from:
    once it has one, its own newest checkpoint (which descends from the parent's) is where it continues."""
    if req.init_from is None or ck.newest_step(store, req.run_id) != 0:
        return None
    return Path(store.checkpoint_dir(req.init_from.run_id, req.init_from.step))


def _check_init_from(store, req: TrainRequest) -> None:
    """A fork's parent checkpoint must exist here, fit this base model and have the request's LoRA shape."""
    init = req.init_from
    assert init is not None  # check_request calls this for a fork only
    if not valid_run_id(init.run_id):
        raise BadRequest("init_from.run_id", f"must be {RUN_ID_RULE}")
    if init.run_id == req.run_id:
        raise BadRequest("init_from.run_id", "a run cannot start from its own checkpoint (resume it instead)", 400)
    src = init_source(store, req)
    if src is None or not (src / ck.STATE).is_file() or not (src / ck.ADAPTER_CONFIG).is_file():
        raise BadRequest(
            "init_from.step",
            f"run {init.run_id!r} has no checkpoint at step {init.step} on this engine (it may have been deleted)",
            404,
        )
    trained_on = ck.read_state(src).get("base_model", "")
    if not _same_model(trained_on, store.base_model_name):
        raise BadRequest(
            "init_from",
            f"checkpoint {init.run_id}@{init.step} was trained on {trained_on!r}; this engine serves "
            f"{store.base_model_name!r}, and an adapter only fits the base model it was trained on",
            400,
        )
    saved_cfg = json.loads((src / ck.ADAPTER_CONFIG).read_text())
    if (m := lora_mismatch(saved_cfg, req.config)) is not None:
        field, old, new = m
        raise BadRequest(
            f"config.{field}",
            f"checkpoint {init.run_id}@{init.step} was trained with {old}, the request has {new}: "
            "a fork keeps the parent's LoRA shape",
            400,
        )



def lora_mismatch(saved: dict, cfg: TrainerConfig) -> tuple[str, object, object] | None:
    """(field, saved value, requested value) of the first shape-defining LoRA setting that differs."""
    pairs = [
        ("lora_rank", saved.get("r"), cfg.lora_rank),
        ("lora_alpha", saved.get("lora_alpha"), cfg.lora_alpha),
        ("lora_target_modules", sorted(saved.get("target_modules") or []), sorted(cfg.lora_target_modules)),
    ]
    return next(((f, old, new) for f, old, new in pairs if old != new), None)
