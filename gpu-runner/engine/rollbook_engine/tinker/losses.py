"""Tinker's four losses, as the trainer's own `grpo_loss` computes them (one implementation of every loss).

Tinker's definitions are SUMS over a datum's positions, no normalisation (r = exp(logπ − sampler logp)):
  cross_entropy        −Σ weights·logπ(target)            grpo_loss "cross_entropy", weight = the datum's weights
  importance_sampling  −Σ r·A                             grpo_loss "importance_sampling", weight 1
  ppo                  −Σ min(r·A, clip(r, low, high)·A)   grpo_loss "ppo", ε = 1 − low, ε_high = high − 1, weight 1
  cispo                −Σ clip(r, low, high).detach()·A·logπ  grpo_loss "cispo", same ε, weight 1
The GRPO step passes its per-trajectory weights instead; with weight 1 grpo_loss's Σ weight·ℓ is Tinker's sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..trainer.loss import LossTerms, grpo_loss

# Tinker's defaults for ppo / cispo's clip range.
DEFAULT_CLIP_LOW = 0.8
DEFAULT_CLIP_HIGH = 1.2


@dataclass
class LossInputs:
    """Flat per-position inputs (one entry per target token of the batch's datums, in order)."""

    weights: torch.Tensor | None = None
    logprobs: torch.Tensor | None = None  # the sampler's
    advantages: torch.Tensor | None = None


def tinker_loss(loss_fn: str, new_lp: torch.Tensor, inputs: LossInputs, clip_low: float = DEFAULT_CLIP_LOW,
                clip_high: float = DEFAULT_CLIP_HIGH) -> LossTerms:
    """The loss's terms; `elementwise` is Tinker's elementwise_loss (each position's share of `loss`)."""
    if loss_fn == "cross_entropy":
        assert inputs.weights is not None  # tinker/checks.py refuses a datum without them
        zeros = torch.zeros_like(new_lp)
        return grpo_loss(new_lp, zeros, zeros, inputs.weights, loss_type="cross_entropy")
    assert inputs.logprobs is not None and inputs.advantages is not None  # checked likewise
    ones = torch.ones_like(new_lp)
    if loss_fn == "importance_sampling":
        return grpo_loss(new_lp, inputs.logprobs, inputs.advantages, ones, loss_type="importance_sampling")
    if loss_fn in ("ppo", "cispo"):
        return grpo_loss(new_lp, inputs.logprobs, inputs.advantages, ones, loss_type=loss_fn,
                         epsilon=1.0 - clip_low, epsilon_high=clip_high - 1.0)
    raise ValueError(f"unknown Tinker loss {loss_fn!r}")
