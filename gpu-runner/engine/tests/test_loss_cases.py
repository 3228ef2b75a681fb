"""Every loss against the shared fixture contracts/fixtures/loss_cases.json (numpy, from the definitions:
tests/gen_loss_cases.py), through both doors: the GRPO step's grpo_loss call (per-trajectory weights) and the
Tinker door's (tinker/losses.py: sums, the datum's weights for cross_entropy). Values and gradients both, so a
misplaced stop-gradient or clip fails too."""

from __future__ import annotations

import json

import pytest
import torch
from zod_contract import CONTRACTS

from rollbook_engine.tinker.losses import LossInputs, tinker_loss
from rollbook_engine.trainer.loss import grpo_loss

CASES = json.loads((CONTRACTS / "fixtures" / "loss_cases.json").read_text())["cases"]
LOSSES = ["cross_entropy", "importance_sampling", "ppo", "cispo"]


def _t(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_grpo_path(case, loss):
    want = case["expected"][loss]
    new = _t(case["new_lp"]).requires_grad_()
    w = _t(case["weight"])
    # As trainer._optimise calls it (token-level ratio, no reference model), ε from the clip range.
    terms = grpo_loss(new, _t(case["old_lp"]), _t(case["advantage"]), w, loss_type=loss,
                      epsilon=1 - case["clip_low"], epsilon_high=case["clip_high"] - 1)
    terms.loss.backward()
    assert terms.loss.item() == pytest.approx(want["weighted_sum"], abs=1e-12)
    assert new.grad.tolist() == pytest.approx((w * _t(want["grad"])).tolist(), abs=1e-12)
    assert terms.elementwise.tolist() == pytest.approx((w * _t(want["per_token"])).tolist(), abs=1e-12)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_tinker_path(case, loss):
    want = case["expected"][loss]
    new = _t(case["new_lp"]).requires_grad_()
    w = _t(case["weight"])
    inputs = LossInputs(weights=w, logprobs=_t(case["old_lp"]), advantages=_t(case["advantage"]))
    terms = tinker_loss(loss, new, inputs, case["clip_low"], case["clip_high"])
    terms.loss.backward()
    # Tinker's cross_entropy is weighted by the datum's weights; its RL losses are plain sums.
    scale = w if loss == "cross_entropy" else torch.ones_like(w)
    total = want["weighted_sum"] if loss == "cross_entropy" else want["sum"]
    assert terms.loss.item() == pytest.approx(total, abs=1e-12)
    assert new.grad.tolist() == pytest.approx((scale * _t(want["grad"])).tolist(), abs=1e-12)
    assert terms.elementwise.tolist() == pytest.approx((scale * _t(want["per_token"])).tolist(), abs=1e-12)
