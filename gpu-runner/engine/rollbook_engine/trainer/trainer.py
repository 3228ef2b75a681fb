"""One GRPO training step on the run's LoRA adapter, checkpointed so a run resumes exactly.

Flow of `train_step` (async; the torch work runs in a worker thread under `store.exclusive()`, so no
generation runs while the shared model trains):
  1. checks (step_checks.py): run id, base model, LoRA targets, token-level sanity, and step == newest
     checkpoint + 1 (409)
  2. seed torch from (seed, step): same request → same result, also after a restart
  3. adapter "train:<run>" (adapter_cache.py): kept in memory between steps together with its AdamW; when missing or out of
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
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

import torch
from peft import LoraConfig
from peft.utils import get_peft_model_state_dict

from ..contracts.train import ProgressLine, ResultLine, TrainedTokens, TrainMetrics, TrainRequest
from . import checkpoints as ck
from . import tenancy
from .adapter_cache import RunState, adapter_name, ensure_state, forget_run
from .advantages import compute_advantages
from .batch import MicroBatch, Row, build_rows, micro_batches
from .distributed import announce, data_parallel, micro_batch_seed
from .errors import TrainFailure
from .loss import grpo_loss, pearson, token_logprobs
from .memory import check_fits, checkpointing, large_blocks_mapped, release
from .step_checks import check_request

# Model families whose logits are exactly lm_head(last hidden state): for these the trainer projects only
# the positions it trains on instead of materialising [B, T, V] logits. Others use the plain forward.
_PLAIN_LM_HEAD = {"llama", "qwen2", "qwen3", "mistral", "phi3", "olmo2"}

ProgressFn = Callable[[ProgressLine], None]


def step_seed(seed: int, step: int) -> int:
    """A 63-bit torch seed from (seed, step): independent streams per step, identical on a re-run."""
    digest = hashlib.sha256(f"rollbook-train:{seed}:{step}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1)


# ---------------------------------------------------------------------------------------------------------
# Forward passes.


def _selected_logits(model, mb: MicroBatch) -> torch.Tensor:
    """Logits [N, V] of the positions that predict trained tokens (row-major order, as MicroBatch's flat tensors).

    No attention mask: micro-batches are right-padded, so under the causal mask a real token never sees the
    padding after it, and the positions are 0..n-1 either way. Without a mask SDPA runs its flash kernel
    (is_causal, O(T) memory); with a padding mask it takes a [B, heads, T, T] mask and, on CUDA, a kernel
    that materialises more. The padding's own outputs are garbage and never selected.
    """
    inner = model.get_base_model()
    sel = mb.mask[:, 1:]
    if getattr(inner.config, "model_type", None) in _PLAIN_LM_HEAD:
        hidden = inner.get_decoder()(input_ids=mb.input_ids, use_cache=False).last_hidden_state
        return inner.get_output_embeddings()(hidden[:, :-1][sel])
    logits = model(input_ids=mb.input_ids, use_cache=False).logits
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


def _optimise(store, req: TrainRequest, state: RunState, mbs: list[MicroBatch], on_progress: ProgressFn | None):
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
    first_old, first_new, first_sampled = {}, {}, {}
    pinned_old: dict[int, torch.Tensor] = {}
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
            old_lp = _old_logprobs(mb, new_lp, pinned_old, index)
            terms = grpo_loss(
                new_lp, old_lp, mb.advantage, mb.weight,
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
                first_old[index] = old_lp.detach().cpu()
                first_new[index] = new_lp.detach().cpu()
                first_sampled[index] = ~mb.recomputed.cpu()
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
    parts = dp.gather((losses, clipped, tokens, kl_sum, ent_sum, first_old, first_new, first_sampled))
    losses = [sum(p[0][e] for p in parts) for e in range(len(losses))]
    clipped, tokens = sum(p[1] for p in parts), sum(p[2] for p in parts)
    kl_sum, ent_sum = sum(p[3] for p in parts), sum(p[4] for p in parts)
    old_lps, new_lps = _in_order(p[5] for p in parts), _in_order(p[6] for p in parts)
    sampled = torch.cat(_in_order(p[7] for p in parts))
    # Sampler against trainer: recomputed tokens agree by construction and would only flatter the correlation.
    probs_corr = pearson(torch.cat(old_lps)[sampled].exp(), torch.cat(new_lps)[sampled].exp())
    first_pass = _per_row(mbs, new_lps)
    return first_pass, dict(
        loss=sum(losses) / len(losses),
        grad_norm=sum(norms) / len(norms),
        kl=kl_sum / tokens if tokens else 0.0,
        clip_fraction=clipped / tokens if tokens else 0.0,
        entropy=ent_sum / tokens if tokens else 0.0,
        probs_corr=probs_corr,
    )


def _in_order(per_rank: Iterable[dict[int, torch.Tensor]]) -> list[torch.Tensor]:
    """Every rank's per-micro-batch tensors, in micro-batch order."""
    return [t for _, t in sorted((kv for d in per_rank for kv in d.items()), key=lambda kv: kv[0])]


def _old_logprobs(mb: MicroBatch, new_lp: torch.Tensor, pinned: dict[int, torch.Tensor],
                  index: int | None) -> torch.Tensor:
    """The old logprobs of the importance ratio: the sampling ones, except in sequences sent with
    recomputed_logprobs (sampled elsewhere, no logprobs), whose tokens take the policy's own from this
    micro-batch's first pass, detached. So the first mini-epoch's ratio there is 1 (an on-policy policy-gradient
    step, as ART trains a trajectory without logprobs), and later mini-epochs ratio and clip against the policy
    the step started from, as they do against sampling logprobs. `index` None: an FSDP filler, never kept."""
    if not mb.has_recomputed:
        return mb.old_lp
    if index is not None and index in pinned:
        return pinned[index]
    old = torch.where(mb.recomputed, new_lp.detach(), mb.old_lp)
    if index is not None:
        pinned[index] = old
    return old


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
    try:
        with lock if lock is not None else contextlib.nullcontext(), large_blocks_mapped(torch.device(store.device)):
            result = _train_step_locked(store, req, on_progress)
    finally:
        # Here, once the step's tensors are out of scope, so what it freed can go back to the system.
        release(torch.device(store.device))
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
    # Batches first: a step its memory budget cannot hold is refused before the run's adapter is touched.
    adv = compute_advantages([[s.reward for s in g.samples] for g in req.groups], req.config.scale_rewards)
    rows = build_rows(req, adv)
    device = torch.device(store.device)
    mbs = micro_batches(rows, req.config.micro_batch_size, store.tokenizer.pad_token_id or 0, device,
                        req.config.micro_batch_tokens)
    check_fits(model, mbs, req.config.gradient_checkpointing, store.dtype, device)
    prev_active, prev_training = model.active_adapter, model.training
    prev_grad = {n: p.requires_grad for n, p in model.named_parameters()}
    try:
        state = ensure_state(store, req)
        model.set_adapter(state.adapter)
        # Only this run's LoRA trains; other adapters loaded for inference must not collect gradients.
        mine = {n for n, _ in state.params}
        for n, p in model.named_parameters():
            p.requires_grad_(n in mine)

        trained_tokens = sum(mb.num_tokens for mb in mbs)
        token_lps: dict[str, TrainedTokens] = {}
        if trained_tokens == 0:
            metrics = _zero_metrics(adv.groups_submitted, adv.groups_trainable, started)
        else:
            model.train()
            with checkpointing(model, req.config.gradient_checkpointing):
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
                "saved_at": datetime.now(UTC).isoformat(),
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
        async with tenancy.train_turns(store).turn(), store.exclusive():
            result = await asyncio.to_thread(train_step_sync, store, req, on_progress)
        assert result is not None  # None is for ranks > 0 of a worker group, which never serve /train
        return result

    task = asyncio.create_task(locked())
    _running.add(task)
    task.add_done_callback(_running.discard)
    return await asyncio.shield(task)

