"""Group-normalised advantages (GRPO / Dr.GRPO).

Each group is several rollouts of one task. A sample's advantage is its reward minus the group mean,
divided by (group std + 1e-6) when `scale_rewards` (GRPO) and left unscaled otherwise (Dr.GRPO, which argues
the std division over-weights near-uniform groups). The std is the population std (ddof=0): the group is all
the samples there are, and it stays defined for any group size.

A group whose rewards are all equal teaches nothing (every advantage is 0): it is counted as submitted but
not trainable. Samples whose advantage is 0 inside a trainable group are dropped too (they would only add
forward passes with zero gradient), as ART does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

STD_EPS = 1e-6
# Rewards are floats from user code; "equal" must survive mean arithmetic such as (0.1+0.2+0.3)/3.
ZERO_TOL = 1e-9


@dataclass
class Advantages:
    # per group, per sample: the advantage, or None when the sample is dropped (its group too when all None)
    per_sample: list[list[float | None]] = field(default_factory=list)
    groups_submitted: int = 0
    groups_trainable: int = 0

    def trainable(self) -> list[tuple[int, int, float]]:
        """(group index, sample index, advantage) of every sample that trains, in request order."""
        return [
            (g, s, a)
            for g, group in enumerate(self.per_sample)
            for s, a in enumerate(group)
            if a is not None
        ]


def group_advantages(rewards: list[float], scale_rewards: bool) -> list[float | None] | None:
    """Advantages of one group, None for the whole group when it has no reward variance."""
    n = len(rewards)
    if n == 0:
        return None
    mean = sum(rewards) / n
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / n)
    if std <= ZERO_TOL:
        return None
    out: list[float | None] = []
    for r in rewards:
        a = r - mean
        if scale_rewards:
            a = a / (std + STD_EPS)
        out.append(None if abs(a) <= ZERO_TOL else a)
    return out


def compute_advantages(groups: list[list[float]], scale_rewards: bool) -> Advantages:
    result = Advantages(groups_submitted=len(groups))
    for rewards in groups:
        adv = group_advantages(rewards, scale_rewards)
        if adv is None:
            result.per_sample.append([None] * len(rewards))
        else:
            result.groups_trainable += 1
            result.per_sample.append(adv)
    return result
