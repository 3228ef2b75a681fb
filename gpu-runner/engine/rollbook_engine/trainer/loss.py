"""The GRPO-family loss as pure torch functions over *trained tokens only*.

The trainer flattens every token with mask=1 into 1-D tensors (one entry per trained token), so nothing
here knows about padding or batches: `new_lp` (requires grad), `old_lp` (sampling logprobs from the engine),
`advantage` (of the token's trajectory), `weight` (aggregation weight), `seq_index` (which sequence the token
belongs to, for GSPO's per-sequence ratio) and optionally `ref_lp` (base model, adapter disabled, for KL).

Aggregation (what we pick, after ART): each trained token weighs 1 / (trained tokens of its trajectory),
and the weights are renormalised to sum to 1 over the whole step's batch. So every trajectory counts the
same however long it is, and within a trajectory every token counts the same. The trainer computes the
weights once for the whole batch, so summing micro-batch losses gives exactly the full-batch loss and
gradient accumulation needs no rescaling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Logprob of each target token and entropy of its full next-token distribution.

    `logits` [N, V] are the rows that predict the trained tokens (the trainer selects them, so the float32
    [N, V] tensor stays small when prompts are long); `targets` [N] the sampled token ids. Entropy is
    detached: it is a metric only.
    """
    logp = torch.log_softmax(logits.float(), dim=-1)
    token_lp = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    with torch.no_grad():
        entropy = -(logp.exp() * logp).sum(-1)
    return token_lp, entropy


@dataclass
class LossTerms:
    loss: torch.Tensor  # scalar: Σ weight · per-token loss (already normalised by the caller's weights)
    ratio: torch.Tensor  # [N] the importance ratio used per token (detached)
    clipped: torch.Tensor  # [N] bool: ratio outside [1-ε, 1+ε_high]
    kl: torch.Tensor  # [N] k3 KL per token (detached), zeros when no ref
    # [N] weight · per-token loss (detached): what each token adds to `loss` (Tinker's elementwise_loss)
    elementwise: torch.Tensor


def sequence_log_ratio(log_ratio: torch.Tensor, seq_index: torch.Tensor, num_seqs: int) -> torch.Tensor:
    """GSPO: mean log-ratio of each sequence's trained tokens, broadcast back to its tokens (keeps the grad)."""
    sums = torch.zeros(num_seqs, dtype=log_ratio.dtype, device=log_ratio.device).index_add(0, seq_index, log_ratio)
    counts = torch.zeros(num_seqs, dtype=log_ratio.dtype, device=log_ratio.device).index_add(
        0, seq_index, torch.ones_like(log_ratio)
    )
    return (sums / counts.clamp(min=1))[seq_index]


def k3_kl(new_lp: torch.Tensor, ref_lp: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(π‖π_ref) at sampled tokens: exp(ref-new) - (ref-new) - 1 ≥ 0."""
    d = ref_lp - new_lp
    return torch.exp(d) - d - 1


def grpo_loss(
    new_lp: torch.Tensor,
    old_lp: torch.Tensor,
    advantage: torch.Tensor,
    weight: torch.Tensor,
    *,
    loss_type: str = "ppo",
    epsilon: float = 0.2,
    epsilon_high: float = 0.28,
    importance_sampling_level: str = "token",
    seq_index: torch.Tensor | None = None,
    num_seqs: int = 0,
    ref_lp: torch.Tensor | None = None,
    beta: float = 0.0,
) -> LossTerms:
    """Per-token GRPO loss, aggregated with `weight`.

    ratio r = π_new / π_sampling, per token, or per sequence (GSPO) as exp(mean over the sequence of log r).
      ppo:                 ℓ = -min(r·A, clip(r, 1-ε, 1+ε_high)·A)
      cispo:               ℓ = -clip(r, 1-ε, 1+ε_high).detach() · A · log π_new
      importance_sampling: ℓ = -r·A (no clip: Tinker's loss of that name)
      cross_entropy:       ℓ = -log π_new (old_lp and advantage unused: supervised, Tinker's)
    plus β · k3(new, ref) when a reference is given. loss = Σ weight·ℓ.
    The last two exist for the Tinker door (tinker/losses.py), which sums with weight 1 (its RL losses) or the
    datum's own weights (cross_entropy): one implementation of every loss the engine trains with.
    """
    log_ratio = new_lp - old_lp
    if importance_sampling_level == "sequence":
        if seq_index is None:
            raise ValueError("sequence-level ratios need seq_index")
        log_ratio = sequence_log_ratio(log_ratio, seq_index, num_seqs)
    elif importance_sampling_level != "token":
        raise ValueError(f"unknown importance_sampling_level {importance_sampling_level!r}")
    ratio = torch.exp(log_ratio)
    lo, hi = 1.0 - epsilon, 1.0 + epsilon_high
    clipped_ratio = torch.clamp(ratio, lo, hi)

    if loss_type == "ppo":
        per_token = -torch.minimum(ratio * advantage, clipped_ratio * advantage)
    elif loss_type == "cispo":
        per_token = -clipped_ratio.detach() * advantage * new_lp
    elif loss_type == "importance_sampling":
        per_token = -ratio * advantage
    elif loss_type == "cross_entropy":
        per_token = -new_lp
    else:
        raise ValueError(f"unknown loss {loss_type!r}")

    if ref_lp is not None:
        kl = k3_kl(new_lp, ref_lp)
        if beta:
            per_token = per_token + beta * kl
        kl = kl.detach()
    else:
        kl = torch.zeros_like(new_lp).detach()

    with torch.no_grad():
        clipped = (ratio < lo) | (ratio > hi)
    weighted = weight * per_token
    return LossTerms(loss=weighted.sum(), ratio=ratio.detach(), clipped=clipped, kl=kl, elementwise=weighted.detach())


def trajectory_weights(tokens_per_trajectory: Sequence[int]) -> list[float]:
    """Per-token weight of each trajectory: 1/(its trained tokens), renormalised so all tokens sum to 1."""
    live = [n for n in tokens_per_trajectory if n > 0]
    if not live:
        return [0.0 for _ in tokens_per_trajectory]
    # Σ over tokens of 1/n_traj is 1 per trajectory, so the renormaliser is the number of live trajectories.
    total = float(len(live))
    return [(1.0 / n) / total if n > 0 else 0.0 for n in tokens_per_trajectory]


def pearson(x: torch.Tensor, y: torch.Tensor) -> float:
    """Pearson correlation; 1.0 for identical constant vectors, 0.0 when one is constant and they differ."""
    x = x.double().flatten()
    y = y.double().flatten()
    if x.numel() == 0:
        return 1.0
    xc, yc = x - x.mean(), y - y.mean()
    denom = torch.sqrt((xc * xc).sum() * (yc * yc).sum())
    if denom.item() == 0.0:
        return 1.0 if torch.allclose(x, y) else 0.0
    return float((xc * yc).sum() / denom)
