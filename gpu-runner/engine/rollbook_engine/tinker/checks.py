"""What the schema cannot check about a Tinker request: it needs the model (vocabulary, context, base model) or
the loss (which inputs it reads). Each refusal is a BadRequest naming the field as `data[i].<name>` (422), or
400 for a request this engine cannot serve (another base model, top_k), before anything is touched."""

from __future__ import annotations

import math

from ..contracts.tinker import TinkerForwardBackwardRequest, TinkerSampleRequest, TrainingTarget
from ..trainer.batch import BadRequest
from ..trainer.step_checks import RUN_ID_RULE, same_model, valid_run_id
from .losses import DEFAULT_CLIP_HIGH, DEFAULT_CLIP_LOW

# Most target positions one forward_backward call trains on: far above a Tinker batch (128 datums × 1k tokens),
# low enough that a hostile body cannot make the engine hold a million positions' logits.
MAX_CALL_TOKENS = 262_144
# A sampler logprob is ≤ 0; the slack allows the sampler's float noise (as trainer/batch.py).
_LOGPROB_SLACK = 1e-3
# Which per-position inputs each loss reads (besides target_tokens).
NEEDS = {
    "cross_entropy": ("weights",),
    "importance_sampling": ("logprobs", "advantages"),
    "ppo": ("logprobs", "advantages"),
    "cispo": ("logprobs", "advantages"),
}


def vocab_size(store) -> int:
    return int(store.model.get_base_model().get_input_embeddings().num_embeddings)


def check_target(store, req: TrainingTarget) -> None:
    """The run id (a folder name and a PEFT key: the shared grammar) and the base model this engine serves."""
    if not valid_run_id(req.run_id):
        raise BadRequest("run_id", f"must be {RUN_ID_RULE}")
    if not same_model(req.base_model, store.base_model_name):
        raise BadRequest("base_model", f"this engine serves {store.base_model_name!r}, not {req.base_model!r}", 400)


def _check_ids(ids: list[int], vocab: int, field: str) -> None:
    bad = next((i for i, t in enumerate(ids) if t >= vocab), None)
    if bad is not None:
        raise BadRequest(f"{field}[{bad}]", f"token id {ids[bad]} ≥ vocabulary size {vocab}")


def clip_range(req: TinkerForwardBackwardRequest) -> tuple[float, float]:
    cfg = req.loss_fn_config
    low = cfg.clip_low_threshold if cfg and cfg.clip_low_threshold is not None else DEFAULT_CLIP_LOW
    high = cfg.clip_high_threshold if cfg and cfg.clip_high_threshold is not None else DEFAULT_CLIP_HIGH
    if low > high:
        raise BadRequest("loss_fn_config.clip_low_threshold", f"{low} is above clip_high_threshold {high}")
    return low, high


def check_forward_backward(store, req: TinkerForwardBackwardRequest) -> None:
    check_target(store, req)
    clip_range(req)
    vocab, context = vocab_size(store), store.max_context_tokens
    total = sum(len(d.tokens) for d in req.data)
    if total > MAX_CALL_TOKENS:
        raise BadRequest("data", f"{total} positions in one call; at most {MAX_CALL_TOKENS} (split the batch)")
    needs = NEEDS[req.loss_fn]
    for i, d in enumerate(req.data):
        path = f"data[{i}]"
        n = len(d.tokens)
        if n > context:
            raise BadRequest(f"{path}.tokens", f"{n} tokens exceed the context of {context}")
        _check_ids(d.tokens, vocab, f"{path}.tokens")
        if len(d.target_tokens) != n:
            raise BadRequest(f"{path}.target_tokens", f"has {len(d.target_tokens)} entries, tokens has {n}: one per position")
        _check_ids(d.target_tokens, vocab, f"{path}.target_tokens")
        for name in needs:
            if getattr(d, name) is None:
                raise BadRequest(f"{path}.{name}", f"loss_fn {req.loss_fn} needs {name} (one per position)")
        for name in ("weights", "logprobs", "advantages"):
            values = getattr(d, name)
            if values is not None and len(values) != n:
                raise BadRequest(f"{path}.{name}", f"has {len(values)} entries, tokens has {n}: one per position")
        if "logprobs" in needs:
            assert d.logprobs is not None
            bad = next((j for j, lp in enumerate(d.logprobs) if not (math.isfinite(lp) and lp <= _LOGPROB_SLACK)), None)
            if bad is not None:
                raise BadRequest(f"{path}.logprobs[{bad}]", f"sampler logprob {d.logprobs[bad]} must be ≤ 0")


def check_sample(store, req: TinkerSampleRequest) -> int:
    """Refuse what cannot be served; returns the context left after the prompt (max_tokens is clamped to it)."""
    if req.top_k != -1:
        raise BadRequest("top_k", f"{req.top_k}: only -1 (no top-k) is served; use top_p", 400)
    _check_ids(req.prompt_token_ids, vocab_size(store), "prompt_token_ids")
    room = store.max_context_tokens - len(req.prompt_token_ids)
    if room <= 0:
        raise BadRequest("prompt_token_ids", f"{len(req.prompt_token_ids)} tokens leave no room in the context of "
                         f"{store.max_context_tokens}", 400)
    return room
