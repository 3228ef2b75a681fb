"""Writes contracts/fixtures/loss_cases.json: per-token inputs and the expected value of every loss the engine
trains with, computed here by hand in numpy from the losses' definitions (Tinker's docs, the GRPO papers),
never by trainer/loss.py, so tests/test_loss_cases.py checks the implementation against an independent one.

    python tests/gen_loss_cases.py   (rerun only when a case is added; the file is committed)

Per case and loss: `per_token` ℓ_i, `grad` dℓ_i/d new_lp_i (where a stop-gradient or a clip lands shows up),
`sum` Σ ℓ_i (Tinker's RL losses: no weights, no normalisation) and `weighted_sum` Σ w_i·ℓ_i (the GRPO step's
aggregation, and Tinker's cross_entropy, whose weights are the datum's).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[3] / "contracts" / "fixtures" / "loss_cases.json"

CASES = [
    {
        "name": "mixed signs, clipped on both sides, masked positions",
        "new_lp": [-0.5, -1.2, -2.0, -0.1, -3.0, -0.7],
        # ratios: e^0.3≈1.35 (above 1.2), e^-0.1≈0.90, e^-0.6≈0.55 (below 0.8), e^0.05≈1.05, 1, e^0.4≈1.49
        "old_lp": [-0.8, -1.1, -1.4, -0.15, -3.0, -1.1],
        "advantage": [1.0, -0.5, 2.0, -1.5, 0.0, -1.0],
        "weight": [0.25, 0.25, 0.1, 0.1, 0.0, 0.3],
        "clip_low": 0.8,
        "clip_high": 1.2,
    },
    {
        "name": "asymmetric clip (DAPO's clip-higher), all positive advantages",
        "new_lp": [-0.2, -0.9, -1.6, -2.5],
        "old_lp": [-0.5, -0.6, -1.7, -2.0],
        "advantage": [0.7, 0.7, 1.3, 1.3],
        "weight": [1.0, 1.0, 0.5, 0.5],
        "clip_low": 0.7,
        "clip_high": 1.28,
    },
]


def expected(case: dict) -> dict:
    new, old = np.array(case["new_lp"], float), np.array(case["old_lp"], float)
    a, w = np.array(case["advantage"], float), np.array(case["weight"], float)
    lo, hi = case["clip_low"], case["clip_high"]
    r = np.exp(new - old)
    clipped = np.clip(r, lo, hi)
    inside = (r >= lo) & (r <= hi)
    # ppo: the min picks the unclipped term where r·A ≤ clip(r)·A; the clipped term has no gradient outside [lo, hi].
    ppo_grad = np.where(r * a <= clipped * a, -r * a, np.where(inside, -r * a, 0.0))
    losses = {
        "cross_entropy": (-new, -np.ones_like(new)),
        "importance_sampling": (-r * a, -r * a),  # d(-e^(new-old)·A)/d new = -r·A
        "ppo": (-np.minimum(r * a, clipped * a), ppo_grad),
        "cispo": (-clipped * a * new, -clipped * a),  # the clipped ratio is detached: only log π carries grad
    }
    return {
        name: {"per_token": list(ell), "grad": list(grad), "sum": float(ell.sum()), "weighted_sum": float((w * ell).sum())}
        for name, (ell, grad) in losses.items()
    }


def main() -> None:
    cases = [{**c, "expected": expected(c)} for c in CASES]
    doc = {"about": "tests/gen_loss_cases.py writes this (numpy, from the definitions); test_loss_cases.py reads it",
           "cases": cases}
    OUT.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
