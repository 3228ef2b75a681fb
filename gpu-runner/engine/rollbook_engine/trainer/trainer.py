"""One GRPO training step on the run's LoRA adapter, checkpointed so a run resumes exactly.

Flow of `train_step` (async; the torch work runs in a worker thread under `store.exclusive()`, so no
generation runs while the shared model trains):
  1. checks: run id, base model, LoRA targets, token-level sanity, and step == newest checkpoint + 1 (409)
  2. seed torch from (seed, step): same request → same result, also after a restart
  3. adapter "train:<run>": kept in memory between steps together with its AdamW; when missing or out of
     date (restart, failed step) it is rebuilt from the newest checkpoint, optimizer state included; a
     fork's first step (init_from) starts from the parent run's checkpoint instead of a fresh LoRA
  4. advantages → rows → micro-batches; for each mini-epoch: forward/backward per micro-batch (gradients
     accumulate; weights are normalised over the whole batch), clip, one AdamW step
  5. save checkpoints/<step:04d> atomically, then `store.invalidate_run(run)` so inference picks it up
A step with no trainable group makes no update but still saves (the adapter unchanged): the run's step
count always advances by one per /train call.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import threading
import time
import weakref
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import torch
from peft import LoraConfig
from peft.utils import get_peft_model_state_dict, set_peft_model_state_dict

from ..contracts.train import ProgressLine, ResultLine, TrainedTokens, TrainerConfig, TrainMetrics, TrainRequest
from . import checkpoints as ck
from . import tenancy
from .advantages import compute_advantages
from .batch import BadRequest, MicroBatch, Row, build_rows, micro_batches, validate_sequences
from .distributed import announce, data_parallel, micro_batch_seed
from .loss import grpo_loss, pearson, token_logprobs

ADAPTER_PREFIX = "train:"
# Run ids become folder names and PEFT module keys: no path separators, no dots (PEFT splits keys on ".").
RUN_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
# Model families whose logits are exactly lm_head(last hidden state): for these the trainer projects only
# the positions it trains on instead of materialising [B, T, V] logits. Others use the plain forward.
_PLAIN_LM_HEAD = {"llama", "qwen2", "qwen3", "mistral", "phi3", "olmo2"}

ProgressFn = Callable[[ProgressLine], None]


class StepConflict(Exception):
    """The request does not fit the run's checkpoints (HTTP 409)."""

    status = 409


class TrainFailure(RuntimeError):
    """The step ran and failed (e.g. a non-finite loss); nothing was saved."""


def adapter_name(run_id: str) -> str:
    return ADAPTER_PREFIX + run_id


def step_seed(seed: int, step: int) -> int:
    """A 63-bit torch seed from (seed, step): independent streams per step, identical on a re-run."""
    digest = hashlib.sha256(f"rollbook-train:{seed}:{step}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1)


# ---------------------------------------------------------------------------------------------------------
# Checks that run before streaming starts (so they can be real HTTP codes) and again under the lock.


def _same_model(requested: str, served: str) -> bool:
    # "HuggingFaceTB/SmolLM2-135M-Instruct" and "SmolLM2-135M-Instruct" name the same weights.
    return requested == served or requested.rstrip("/").split("/")[-1] == served.rstrip("/").split("/")[-1]


_leaf_names: "weakref.WeakKeyDictionary[object, frozenset[str]]" = weakref.WeakKeyDictionary()


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
    if not RUN_ID_RE.match(req.run_id):
        raise BadRequest("run_id", "must be 1-128 characters of A-Z a-z 0-9 _ -")
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


def _init_source(store, req: TrainRequest) -> Path | None:
    """The checkpoint a fork starts from, or None. Only a run with no checkpoint of its own reads init_from:
    once it has one, its own newest checkpoint (which descends from the parent's) is where it continues."""
    if req.init_from is None or ck.newest_step(store, req.run_id) != 0:
        return None
    return Path(store.checkpoint_dir(req.init_from.run_id, req.init_from.step))


def _check_init_from(store, req: TrainRequest) -> None:
    """A fork's parent checkpoint must exist here, fit this base model and have the request's LoRA shape."""
    init = req.init_from
    if not RUN_ID_RE.match(init.run_id):
        raise BadRequest("init_from.run_id", "must be 1-128 characters of A-Z a-z 0-9 _ -")
    if init.run_id == req.run_id:
        raise BadRequest("init_from.run_id", "a run cannot start from its own checkpoint (resume it instead)", 400)
    src = _init_source(store, req)
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
    if (m := _lora_mismatch(saved_cfg, req.config)) is not None:
        field, old, new = m
        raise BadRequest(
            f"config.{field}",
            f"checkpoint {init.run_id}@{init.step} was trained with {old}, the request has {new}: "
            "a fork keeps the parent's LoRA shape",
            400,
        )


# ---------------------------------------------------------------------------------------------------------
# The run's adapter and optimizer, cached between steps.


@dataclass
class _RunState:
    adapter: str
    params: list[tuple[str, torch.nn.Parameter]]
    optimizer: torch.optim.AdamW
    step: int  # the checkpoint step this in-memory adapter and optimizer equal
    # The files of checkpoint `step` as this engine wrote/read them (tenancy.fingerprint); None when the state
    # came from a spill, i.e. it may differ from what is on disk and must be spilled again if evicted.
    on_disk: tuple | None = None


_states: "weakref.WeakKeyDictionary[object, dict[str, _RunState]]" = weakref.WeakKeyDictionary()
_states_lock = threading.Lock()


def _run_states(store) -> dict[str, _RunState]:
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


def _lora_mismatch(saved: dict, cfg: TrainerConfig) -> tuple[str, object, object] | None:
    """(field, saved value, requested value) of the first shape-defining LoRA setting that differs."""
    pairs = [
        ("lora_rank", saved.get("r"), cfg.lora_rank),
        ("lora_alpha", saved.get("lora_alpha"), cfg.lora_alpha),
        ("lora_target_modules", sorted(saved.get("target_modules") or []), sorted(cfg.lora_target_modules)),
    ]
    return next(((f, old, new) for f, old, new in pairs if old != new), None)


def _check_lora_matches(saved: dict, cfg: TrainerConfig, ckpt: Path) -> None:
    """Shape-defining LoRA settings cannot change mid-run; lr, betas, loss etc. can."""
    if (m := _lora_mismatch(saved, cfg)) is not None:
        field, old, new = m
        raise StepConflict(f"config.{field}: checkpoint {ckpt.name} was trained with {old}, the request has {new}")


def _ensure_state(store, req: TrainRequest) -> _RunState:
    """The run's trainable adapter + optimizer equal to the newest checkpoint (or fresh at step 1)."""
    model = store.model
    name = adapter_name(req.run_id)
    states = _run_states(store)
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
    if ckpt is None and (src := _init_source(store, req)) is not None:
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
    # Room in the memory budget first (evicting least recently used runs), then allocate.
    store.ledger.reserve(
        name, "train",
        tenancy.estimate_state_bytes(model.get_base_model(), req.config.lora_rank, req.config.lora_target_modules),
        evict=lambda: _evict_state(store, req.run_id), pin=True,
    )
    # autocast_adapter_dtype keeps LoRA weights in fp32 on a bf16 base: fp32 master weights for AdamW.
    # Its random LoRA init is overwritten when weights are loaded: then it must not consume the step's RNG
    # stream (seeded before), or a restored run would draw other dropout masks than one kept in memory.
    rng = torch.random.fork_rng(devices=[store.device] if store.device.type == "cuda" else [])
    with rng if saved_weights is not None else contextlib.nullcontext():
        model.add_adapter(name, _lora_config(store, req.config), autocast_adapter_dtype=True)
    params = _adapter_params(model, name)
    for _, p in params:
        p.data = p.data.float()
    if saved_weights is not None:
        result = set_peft_model_state_dict(model, saved_weights, adapter_name=name)
        unexpected = [k for k in result.unexpected_keys if name in k or "lora" in k]
        if unexpected:
            raise TrainFailure(f"checkpoint {ckpt} has weights this adapter lacks: {unexpected[:3]}")
    optimizer = _new_optimizer(params, req.config)
    if spilled_optimizer is not None:
        optimizer.load_state_dict(spilled_optimizer)
        _apply_hyperparams(optimizer, req.config)
    elif load_optimizer:
        optimizer.load_state_dict(ck.read_optimizer(ckpt))
        _apply_hyperparams(optimizer, req.config)
    own_ckpt = spill is None and newest > 0
    state = _RunState(adapter=name, params=params, optimizer=optimizer, step=newest,
                      on_disk=tenancy.fingerprint(Path(ckpt)) if own_ckpt else None)
    states[req.run_id] = state
    store.ledger.resize(name, tenancy.state_bytes(params, optimizer))
    if newest > 0:
        tenancy.note_restored(store, req.run_id, "spill" if spill is not None else "checkpoint")
    return state


def _evict_state(store, run_id: str) -> None:
    """The ledger's eviction of a run's training state (under the model lock, never while its step runs):
    spill it when it is not what its newest checkpoint holds, then delete the adapter so its memory is freed."""
    state = _run_states(store).get(run_id)
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
    _run_states(store).pop(run_id, None)
    _drop_adapter(store.model, state.adapter)
    tenancy.mark_evicted(store, run_id)


def forget_run(store, run_id: str) -> None:
    """Drop the cached adapter/optimizer (after a failure, or when a run is deleted); the next step reloads
    (from the run's spill if it has one for its step, else from its newest checkpoint)."""
    state = _run_states(store).pop(run_id, None)
    store.ledger.release(adapter_name(run_id))
    if state is not None:
        try:
            _drop_adapter(store.model, state.adapter)
        except Exception:  # the next _ensure_state replaces it anyway
            pass


# ---------------------------------------------------------------------------------------------------------
# Forward passes.


def _selected_logits(model, mb: MicroBatch) -> torch.Tensor:
    """Logits [N, V] of the positions that predict trained tokens (row-major order, as MicroBatch's flat tensors)."""
    inner = model.get_base_model()
    sel = mb.mask[:, 1:]
    if getattr(inner.config, "model_type", None) in _PLAIN_LM_HEAD:
        hidden = inner.get_decoder()(
            input_ids=mb.input_ids, attention_mask=mb.attention_mask, use_cache=False
        ).last_hidden_state
        return inner.get_output_embeddings()(hidden[:, :-1][sel])
    logits = model(input_ids=mb.input_ids, attention_mask=mb.attention_mask, use_cache=False).logits
    return logits[:, :-1][sel]


def _targets(mb: MicroBatch) -> torch.Tensor:
    return mb.input_ids[:, 1:][mb.mask[:, 1:]]


def _autocast(device: torch.device, dtype: torch.dtype):
    if device.type == "cuda" and dtype in (torch.bfloat16, torch.float16):
        return torch.autocast("cuda", dtype=dtype)
    return torch.autocast(device.type, enabled=False)


# ---------------------------------------------------------------------------------------------------------
# The step.


def _zero_metrics(groups_submitted: int, groups_trainable: int, started: float) -> TrainMetrics:
    return TrainMetrics(
        loss=0.0, grad_norm=0.0, kl=0.0, clip_fraction=0.0, entropy=0.0, probs_corr=0.0, trained_tokens=0,
        groups_submitted=groups_submitted, groups_trainable=groups_trainable, skipped=True,
        duration_s=time.perf_counter() - started,
    )


def _optimise(store, req: TrainRequest, state: _RunState, mbs: list[MicroBatch], on_progress: ProgressFn | None):
    """Mini-epochs × micro-batches with accumulation; returns the metric pieces.

    Under torchrun (distributed.py) this rank runs only its share of the micro-batches; the gradients are
    summed over ranks before clipping and the metric sums gathered after, so every rank ends the step with
    the single-process adapter and optimizer state.
    """
    cfg = req.config
    model = store.model
    device = torch.device(store.device)
    params = [p for _, p in state.params]
    dp = data_parallel()
    mine = dp.share(mbs)
    total_mb = cfg.mini_epochs * len(mine)
    base_seed = torch.initial_seed()
    losses, norms = [], []
    clipped = tokens = 0
    kl_sum = ent_sum = 0.0
    first_old, first_new = {}, {}
    done = 0
    for epoch in range(cfg.mini_epochs):
        state.optimizer.zero_grad(set_to_none=True)
        epoch_loss = 0.0
        failure = None
        for index, mb in mine:
            torch.manual_seed(micro_batch_seed(base_seed, epoch, -1 if index is None else index))
            ref_lp = None
            if cfg.beta > 0:
                with torch.no_grad(), model.disable_adapter(), _autocast(device, store.dtype):
                    ref_lp, _ = token_logprobs(_selected_logits(model, mb), _targets(mb))
            with _autocast(device, store.dtype):
                logits = _selected_logits(model, mb)
            new_lp, entropy = token_logprobs(logits, _targets(mb))
            terms = grpo_loss(
                new_lp, mb.old_lp, mb.advantage, mb.weight,
                loss_type=cfg.loss, epsilon=cfg.epsilon, epsilon_high=cfg.epsilon_high,
                importance_sampling_level=cfg.importance_sampling_level,
                seq_index=mb.seq_index, num_seqs=mb.num_seqs, ref_lp=ref_lp, beta=cfg.beta,
            )
            if index is None or not torch.isfinite(terms.loss):
                if index is not None:
                    failure = f"non-finite loss in mini-epoch {epoch + 1}; nothing was saved"
                # An FSDP lockstep filler, or a failed micro-batch: still one backward, so every rank runs the
                # same collectives (sharded layers gather in backward too); nothing is learnt from it, and a
                # failure is raised on every rank below.
                (terms.loss * 0.0).backward()
                continue
            terms.loss.backward()
            mb_loss = terms.loss.item()
            epoch_loss += mb_loss
            clipped += int(terms.clipped.sum())
            tokens += mb.num_tokens
            kl_sum += float(terms.kl.sum())
            ent_sum += float(entropy.sum())
            if epoch == 0:
                first_old[index] = mb.old_lp.detach().cpu()
                first_new[index] = new_lp.detach().cpu()
            done += 1
            if on_progress is not None:
                w = float(mb.weight.sum())
                on_progress(ProgressLine(micro_batch=done, micro_batches=total_mb, loss=mb_loss / w if w else 0.0))
        if dp.any(failure is not None):
            raise TrainFailure(failure or f"non-finite loss on another rank in mini-epoch {epoch + 1}; nothing was saved")
        dp.sum_grads(params)
        norm = torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
        if not torch.isfinite(norm):
            raise TrainFailure(f"non-finite gradient norm in mini-epoch {epoch + 1}; nothing was saved")
        state.optimizer.step()
        state.optimizer.zero_grad(set_to_none=True)
        losses.append(epoch_loss)
        norms.append(float(norm))
    # Metric sums over every rank's micro-batches (identity with one process).
    parts = dp.gather((losses, clipped, tokens, kl_sum, ent_sum, first_old, first_new))
    losses = [sum(p[0][e] for p in parts) for e in range(len(losses))]
    clipped, tokens = sum(p[1] for p in parts), sum(p[2] for p in parts)
    kl_sum, ent_sum = sum(p[3] for p in parts), sum(p[4] for p in parts)
    first_old = [t for _, t in sorted((kv for p in parts for kv in p[5].items()), key=lambda kv: kv[0])]
    first_new = [t for _, t in sorted((kv for p in parts for kv in p[6].items()), key=lambda kv: kv[0])]
    probs_corr = pearson(torch.cat(first_old).exp(), torch.cat(first_new).exp())
    first_pass = _per_row(mbs, first_new)
    return first_pass, dict(
        loss=sum(losses) / len(losses),
        grad_norm=sum(norms) / len(norms),
        kl=kl_sum / tokens if tokens else 0.0,
        clip_fraction=clipped / tokens if tokens else 0.0,
        entropy=ent_sum / tokens if tokens else 0.0,
        probs_corr=probs_corr,
    )


def _per_row(mbs: list[MicroBatch], flat: list[torch.Tensor]) -> dict[int, list[float]]:
    """Split each micro-batch's flat per-token logprobs back into rows (keyed by row index)."""
    out: dict[int, list[float]] = {}
    for mb, values in zip(mbs, flat):
        for row, part in zip(mb.row_ids, torch.split(values, mb.row_tokens)):
            out[row] = part.tolist()
    return out


# Five decimals: 1e-5 nats is far below what a ratio display or a correlation can show, and it keeps a
# long step's result line about half the size of full float reprs.
_LOGPROB_DECIMALS = 5


def trained_tokens_by_sample(req: TrainRequest, rows: list[Row], per_row: dict[int, list[float]],
                             advantages: dict[str, float]) -> dict[str, TrainedTokens]:
    """Per trained sample: its advantage and, per sequence, the trainer's logprob of each masked token."""
    out: dict[str, TrainedTokens] = {}
    for group in req.groups:
        for sample in group.samples:
            if sample.trajectory_id not in advantages:
                continue
            out[sample.trajectory_id] = TrainedTokens(
                advantage=advantages[sample.trajectory_id], sequences=[[] for _ in sample.sequences]
            )
    for i, row in enumerate(rows):
        values = per_row.get(i)
        if values is not None and row.trajectory_id in out:
            out[row.trajectory_id].sequences[row.sequence] = [round(v, _LOGPROB_DECIMALS) for v in values]
    return out


def train_step_sync(store, req: TrainRequest, on_progress: ProgressFn | None = None) -> ResultLine | None:
    """The blocking step. Call only while holding `store.exclusive()` (train_step does). Returns None only on
    ranks > 0 of a distributed worker group, which do not write the checkpoint.

    Also takes the store's model lock where it has one (ModelStore._model_lock, held by adapter loads and
    generation batches), so an adapter load outside a generation batch cannot change PEFT modules mid-step.
    """
    # Rank 0 of a distributed worker group (distributed_worker.py) hands the request to the other ranks,
    # which run this same function on it; a no-op in a single process.
    announce(req)
    lock = getattr(store, "_model_lock", None)
    with lock if lock is not None else contextlib.nullcontext():
        result = _train_step_locked(store, req, on_progress)
    # Outside the model lock: invalidate_run flushes stale inference adapters only when it can take it.
    store.invalidate_run(req.run_id)
    return result


def _train_step_locked(store, req: TrainRequest, on_progress: ProgressFn | None) -> ResultLine | None:
    started = time.perf_counter()
    check_request(store, req)
    dp = data_parallel()
    if dp.writes_checkpoints:
        ck.sweep_temp(store, req.run_id)
    seed = step_seed(req.seed, req.step)
    torch.manual_seed(seed)

    model = store.model
    prev_active, prev_training = model.active_adapter, model.training
    prev_grad = {n: p.requires_grad for n, p in model.named_parameters()}
    try:
        state = _ensure_state(store, req)
        model.set_adapter(state.adapter)
        # Only this run's LoRA trains; other adapters loaded for inference must not collect gradients.
        mine = {n for n, _ in state.params}
        for n, p in model.named_parameters():
            p.requires_grad_(n in mine)

        adv = compute_advantages([[s.reward for s in g.samples] for g in req.groups], req.config.scale_rewards)
        rows = build_rows(req, adv)
        mbs = micro_batches(rows, req.config.micro_batch_size, store.tokenizer.pad_token_id or 0, torch.device(store.device))
        trained_tokens = sum(mb.num_tokens for mb in mbs)
        token_lps: dict[str, TrainedTokens] = {}
        if trained_tokens == 0:
            metrics = _zero_metrics(adv.groups_submitted, adv.groups_trainable, started)
        else:
            model.train()
            first_pass, parts = _optimise(store, req, state, mbs, on_progress)
            advantages = {
                req.groups[g].samples[s].trajectory_id: a for g, s, a in adv.trainable()
            }
            token_lps = trained_tokens_by_sample(req, rows, first_pass, advantages)
            metrics = TrainMetrics(
                **parts, trained_tokens=trained_tokens, groups_submitted=adv.groups_submitted,
                groups_trainable=adv.groups_trainable, skipped=False, duration_s=time.perf_counter() - started,
            )

        if not dp.writes_checkpoints:
            # Another rank of a distributed step: same adapter and optimizer in memory, rank 0 saves them.
            state.step = req.step
            return None
        peft_cfg = model.peft_config[state.adapter]
        saving = time.perf_counter()
        info = ck.write_checkpoint(
            Path(store.checkpoint_dir(req.run_id, req.step)),
            # save_embedding_layers=False: "auto" looks the base model up on the hub (no network here),
            # and LoRA never touches the embeddings anyway.
            get_peft_model_state_dict(model, adapter_name=state.adapter, save_embedding_layers=False),
            _saved_config(peft_cfg),
            state.optimizer.state_dict(),
            {
                "run_id": req.run_id,
                "step": req.step,
                "seed": req.seed,
                "torch_seed": seed,
                "base_model": store.base_model_name,
                "config": req.config.model_dump(),
                "metrics": metrics.model_dump(),
                # Lineage on disk: which checkpoint this run's adapter started from (null: a fresh LoRA).
                "init_from": _recorded_init_from(store, req),
                "saved_at": datetime.now(timezone.utc).isoformat(),
            },
        )
        state.step = req.step
        state.on_disk = tenancy.fingerprint(Path(info.path))
        tenancy.discard_spill(store, req.run_id)  # the new checkpoint supersedes it
        store.ledger.resize(state.adapter, tenancy.state_bytes(state.params, state.optimizer))
        # duration_s includes the save, which is part of what the step costs the run.
        metrics.duration_s = time.perf_counter() - started
        metrics.checkpoint_s = time.perf_counter() - saving
    except BaseException:
        forget_run(store, req.run_id)  # in-memory adapter may be half-updated; reload from disk next time
        raise
    finally:
        store.ledger.unpin(adapter_name(req.run_id))
        if prev_active in model.peft_config:
            model.set_adapter(prev_active)
        for n, p in model.named_parameters():
            p.requires_grad_(prev_grad.get(n, False))
        model.train(prev_training)
    return ResultLine(metrics=metrics, checkpoint=info, token_logprobs=token_lps)


def _recorded_init_from(store, req: TrainRequest) -> dict | None:
    """The fork's parent, carried into every checkpoint of the run (read from the previous one after step 1)."""
    if req.step == 1:
        return req.init_from.model_dump() if req.init_from is not None else None
    prev = Path(store.checkpoint_dir(req.run_id, req.step - 1))
    return ck.read_state(prev).get("init_from") if (prev / ck.STATE).is_file() else None


def _saved_config(cfg: LoraConfig) -> LoraConfig:
    # Saved for loading by the inference side: inference_mode=True, as PEFT's own save_pretrained writes.
    import copy

    out = copy.deepcopy(cfg)
    out.inference_mode = True
    return out


# Steps keep running after a client disconnects (the thread cannot be interrupted and must release the
# lock only when done); holding the tasks here stops them from being garbage-collected mid-step.
_running: set[asyncio.Task] = set()


async def train_step(store, req: TrainRequest, on_progress: ProgressFn | None = None) -> ResultLine:
    """Run one step in a worker thread while holding the store's exclusive lock; immune to cancellation."""

    async def locked() -> ResultLine:
        # One first-come-first-served queue for all runs' steps (tenancy.FifoTurns), then the model.
        async with tenancy.train_turns(store).turn():
            async with store.exclusive():
                return await asyncio.to_thread(train_step_sync, store, req, on_progress)

    task = asyncio.create_task(locked())
    _running.add(task)
    task.add_done_callback(_running.discard)
    return await asyncio.shield(task)

