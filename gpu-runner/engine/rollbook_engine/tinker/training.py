"""forward_backward and optim_step: the blocking bodies (call them through locked.exclusive_call).

forward_backward computes each position's logprob with the trainer's forward (`_selected_logits`, the same
autocast and activation checkpointing as a /train step) and Tinker's loss with the trainer's `grpo_loss`
(losses.py), then backpropagates: the gradients ACCUMULATE in the run's adapter `.grad` across calls until
optim_step applies them with AdamW and zeroes them. Losses are sums (Tinker's), so accumulating calls needs
no rescaling: two calls over halves of a batch leave the gradient of one call over the whole batch.
"""

from __future__ import annotations

import math
import time

import torch

from ..contracts.tinker import (
    LossFnOutput,
    OptimStepMetrics,
    TinkerForwardBackwardRequest,
    TinkerForwardBackwardResponse,
    TinkerOptimStepRequest,
    TinkerOptimStepResponse,
)
from ..trainer import tenancy
from ..trainer.batch import BadRequest
from ..trainer.errors import TrainFailure
from ..trainer.loss import token_logprobs
from ..trainer.memory import check_fits, checkpointing
from ..trainer.trainer import _autocast, _selected_logits
from .batches import tinker_batches
from .checks import check_forward_backward, check_target, clip_range
from .locked import model_locked
from .losses import tinker_loss
from .session import Session, remember
from .state import release_pin, training_state


def forward_backward_sync(store, req: TinkerForwardBackwardRequest) -> TinkerForwardBackwardResponse:
    with model_locked(store):
        check_forward_backward(store, req)  # again under the lock: cheap, and the route's check may be stale
        model, device = store.model, torch.device(store.device)
        batches = tinker_batches(req.data, store.tokenizer.pad_token_id or 0, device)
        try:
            check_fits(model, [b.mb for b in batches], True, store.dtype, device)
        except BadRequest as err:  # it names /train's setting; here the datums are what is too large
            raise BadRequest("data", f"a micro-batch of this call does not fit: {err}", err.status) from err
        session, state = training_state(store, req)
        low, high = clip_range(req)
        prev_active, prev_training = model.active_adapter, model.training
        prev_grad = {n: p.requires_grad for n, p in model.named_parameters()}
        outputs: dict[int, LossFnOutput] = {}
        loss_sum = ent_sum = 0.0
        clipped = tokens = rl_tokens = 0
        backpropagated = False
        try:
            model.set_adapter(state.adapter)
            mine = {n for n, _ in state.params}
            for n, p in model.named_parameters():
                p.requires_grad_(n in mine and not req.forward_only)
            model.train(not req.forward_only)
            with torch.set_grad_enabled(not req.forward_only), checkpointing(model, not req.forward_only):
                for b in batches:
                    with _autocast(device, store.dtype):
                        logits = _selected_logits(model, b.mb)
                    new_lp, entropy = token_logprobs(logits, b.targets)
                    terms = tinker_loss(req.loss_fn, new_lp, b.inputs, low, high)
                    if not torch.isfinite(terms.loss):
                        raise TrainFailure("non-finite loss in forward_backward")
                    if not req.forward_only:
                        backpropagated = True
                        terms.loss.backward()
                    loss_sum += terms.loss.item()
                    ent_sum += float(entropy.sum())
                    if b.inputs.advantages is not None:
                        # Over the positions that train (advantage ≠ 0): a prompt's positions carry sampler
                        # logprob 0 and so a meaningless ratio.
                        live = b.inputs.advantages != 0
                        clipped += int((terms.clipped & live).sum())
                        rl_tokens += int(live.sum())
                    tokens += b.mb.num_tokens
                    for datum, lps, ell in zip(b.mb.row_ids, torch.split(new_lp.detach().cpu(), b.mb.row_tokens),
                                               torch.split(terms.elementwise.cpu(), b.mb.row_tokens)):
                        outputs[datum] = LossFnOutput(logprobs=lps.tolist(), elementwise_loss=ell.tolist())
        except BaseException:
            if backpropagated:
                # Part of this call's gradient may already sit in .grad: the pending sum is no longer any set of
                # whole batches. Drop it all and make the next optim_step say so, never apply it.
                _discard_pending(store, session, state, lost=1)
            raise
        finally:
            release_pin(store, req.run_id)
            if prev_active in model.peft_config:
                model.set_adapter(prev_active)
            for n, p in model.named_parameters():
                p.requires_grad_(prev_grad.get(n, False))
            model.train(prev_training)
        if not req.forward_only:
            session.pending_batches += 1
            session.pending_loss += loss_sum
            session.pending_tokens += tokens
            remember(store, session)
        metrics = {"loss:sum": loss_sum, "entropy:mean": ent_sum / tokens if tokens else 0.0,
                   "tokens:sum": float(tokens)}
        if req.loss_fn in ("ppo", "cispo"):
            metrics["clip_fraction:mean"] = clipped / rl_tokens if rl_tokens else 0.0
        return TinkerForwardBackwardResponse(loss_fn_outputs=[outputs[i] for i in range(len(req.data))],
                                             metrics=metrics, pending_batches=session.pending_batches)


def _discard_pending(store, session: Session, state, lost: int) -> None:
    state.optimizer.zero_grad(set_to_none=True)
    session.lost_batches += session.pending_batches + lost
    session.drop_pending()
    remember(store, session)


def optim_step_sync(store, req: TinkerOptimStepRequest) -> TinkerOptimStepResponse:
    started = time.perf_counter()
    with model_locked(store):
        check_target(store, req)
        session, state = training_state(store, req)
        try:
            if session.lost_batches:
                lost = session.lost_batches
                state.optimizer.zero_grad(set_to_none=True)
                session.lost_batches = 0
                session.drop_pending()
                remember(store, session)
                raise TrainFailure(
                    f"run {req.run_id!r}: the gradients of {lost} forward_backward call(s) since step {session.step} "
                    "were lost (the run's training state left memory: evicted for another run, an engine restart, "
                    "or a failed call) before this optim_step; nothing was applied and what was pending is "
                    f"discarded: redo forward_backward for step {session.step + 1}")
            adam = req.adam_params
            for group in state.optimizer.param_groups:
                group["lr"] = adam.learning_rate
                group["betas"] = (adam.beta1, adam.beta2)
                group["eps"] = adam.eps
                group["weight_decay"] = adam.weight_decay
            params = [p for _, p in state.params]
            # No gradient yet (no forward_backward since the last step): AdamW skips every parameter, the step
            # still counts (Tinker's), grad_norm 0.
            limit = adam.grad_clip_norm if adam.grad_clip_norm > 0 else math.inf
            norm = float(torch.nn.utils.clip_grad_norm_(params, limit))
            if not math.isfinite(norm):
                state.optimizer.zero_grad(set_to_none=True)
                session.drop_pending()
                remember(store, session)
                raise TrainFailure(f"run {req.run_id!r}: non-finite gradient norm; nothing was applied and the "
                                   "pending gradients are discarded")
            state.optimizer.step()
            state.optimizer.zero_grad(set_to_none=True)
            metrics = OptimStepMetrics(grad_norm=norm, learning_rate=adam.learning_rate, loss=session.pending_loss,
                                       trained_tokens=session.pending_tokens, batches=session.pending_batches,
                                       duration_s=0.0)
            session.step += 1
            state.step = session.step
            state.on_disk = None  # the weights now differ from every checkpoint: evicting them spills them
            session.origin = None
            session.drop_pending()
            remember(store, session)
            # AdamW's moments exist after its first step: the ledger holds their measured bytes.
            store.ledger.resize(state.adapter, tenancy.state_bytes(state.params, state.optimizer))
        finally:
            release_pin(store, req.run_id)
    metrics.duration_s = time.perf_counter() - started
    return TinkerOptimStepResponse(step=session.step, metrics=metrics)
