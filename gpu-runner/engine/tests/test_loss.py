"""The GRPO loss, its gradient and the advantages, against numbers worked out by hand in each test.

The batch (two groups, used by every loss test):
  group 1 rewards [1, 0]    → mean 0.5, population std 0.5      → A = ±0.5 / (0.5 + 1e-6)
  group 2 rewards [3, 1, 2] → mean 2,   population std √(2/3)   → A = ±1 / (√(2/3) + 1e-6), 0 (dropped)
Trained tokens per trajectory: g1s0: 2, g1s1: 1, g2s0: 3, g2s1: 1. Four live trajectories, so each token
weighs 1 / (its trajectory's tokens · 4): 1/8, 1/4, 1/12, 1/4.
Log-ratios new − old per token: g1s0 [0.1, −0.3], g1s1 [0.5], g2s0 [0, 0.2, −0.1], g2s1 [−0.4].
Clip range with ε = 0.2, ε_high = 0.28: [0.8, 1.28].
"""

from __future__ import annotations

import math

import pytest
import torch

from rollbook_engine.contracts.train import TrainRequest
from rollbook_engine.trainer.advantages import compute_advantages
from rollbook_engine.trainer.batch import build_rows, micro_batches
from rollbook_engine.trainer.loss import grpo_loss, k3_kl, pearson, trajectory_weights

A1 = 0.5 / (0.5 + 1e-6)
A2 = 1.0 / (math.sqrt(2.0 / 3.0) + 1e-6)
LOG_RATIO = [0.1, -0.3, 0.5, 0.0, 0.2, -0.1, -0.4]
OLD = [-1.0, -2.0, -0.5, -1.5, -0.7, -2.2, -0.9]
R = [math.exp(x) for x in LOG_RATIO]
W = [1 / 8, 1 / 8, 1 / 4, 1 / 12, 1 / 12, 1 / 12, 1 / 4]
ADV = [A1, A1, -A1, A2, A2, A2, -A2]
SEQ = [0, 0, 1, 2, 2, 2, 3]


def flat_batch():
    """The batch above as the trainer's flat per-token tensors, weights and advantages from the real helpers."""
    adv = compute_advantages([[1.0, 0.0], [3.0, 1.0, 2.0]], scale_rewards=True)
    picked = adv.trainable()
    assert [(g, s) for g, s, _ in picked] == [(0, 0), (0, 1), (1, 0), (1, 1)]  # g2s2 (A = 0) dropped
    per_traj = trajectory_weights([2, 1, 3, 1])
    assert per_traj == pytest.approx([1 / 8, 1 / 4, 1 / 12, 1 / 4])
    tokens_per_traj = [2, 1, 3, 1]
    advantage = [a for (_, _, a), n in zip(picked, tokens_per_traj) for _ in range(n)]
    weight = [w for w, n in zip(per_traj, tokens_per_traj) for _ in range(n)]
    assert advantage == pytest.approx(ADV, rel=1e-12)
    assert weight == pytest.approx(W, rel=1e-12)
    old = torch.tensor(OLD, dtype=torch.float64)
    new = (old + torch.tensor(LOG_RATIO, dtype=torch.float64)).requires_grad_(True)
    return new, old, torch.tensor(advantage, dtype=torch.float64), torch.tensor(weight, dtype=torch.float64)


def test_ppo_token_level_loss_and_gradient():
    new, old, adv, w = flat_batch()
    terms = grpo_loss(new, old, adv, w, loss_type="ppo", epsilon=0.2, epsilon_high=0.28)
    terms.loss.backward()
    # Per token ℓ = -min(r·A, clip(r)·A). Token 2 (r=0.74 < 0.8, A>0): min takes r·A, unclipped branch.
    # Token 3 (r=1.65 > 1.28, A<0): min takes r·A (the pessimistic side), so still unclipped.
    # Token 7 (r=0.67 < 0.8, A<0): min takes 0.8·A, clipped: constant, zero gradient.
    expected_loss = (
        W[0] * -R[0] * A1 + W[1] * -R[1] * A1 + W[2] * R[2] * A1
        + W[3] * -R[3] * A2 + W[4] * -R[4] * A2 + W[5] * -R[5] * A2
        + W[6] * 0.8 * A2
    )
    # dℓ/dnew = -A·r on the unclipped branch (dr/dnew = r), 0 on the clipped one.
    expected_grad = [-W[0] * R[0] * A1, -W[1] * R[1] * A1, W[2] * R[2] * A1,
                     -W[3] * R[3] * A2, -W[4] * R[4] * A2, -W[5] * R[5] * A2, 0.0]
    assert terms.loss.item() == pytest.approx(expected_loss, rel=1e-9)
    assert new.grad.tolist() == pytest.approx(expected_grad, rel=1e-9, abs=1e-12)
    # Ratios outside [0.8, 1.28]: tokens 2, 3 and 7.
    assert terms.clipped.tolist() == [False, True, True, False, False, False, True]


def test_cispo_loss_and_gradient():
    new, old, adv, w = flat_batch()
    terms = grpo_loss(new, old, adv, w, loss_type="cispo", epsilon=0.2, epsilon_high=0.28)
    terms.loss.backward()
    # ℓ = -clip(r).detach()·A·logπ_new; clip(r) per token: r, 0.8, 1.28, r, r, r, 0.8
    c = [R[0], 0.8, 1.28, R[3], R[4], R[5], 0.8]
    new_lp = [o + x for o, x in zip(OLD, LOG_RATIO)]
    expected_loss = sum(W[i] * -c[i] * ADV[i] * new_lp[i] for i in range(7))
    expected_grad = [W[i] * -c[i] * ADV[i] for i in range(7)]  # every token keeps a gradient
    assert terms.loss.item() == pytest.approx(expected_loss, rel=1e-9)
    assert new.grad.tolist() == pytest.approx(expected_grad, rel=1e-9)


def test_gspo_sequence_level_ratio_loss_and_gradient():
    new, old, adv, w = flat_batch()
    terms = grpo_loss(
        new, old, adv, w, loss_type="ppo", epsilon=0.2, epsilon_high=0.28,
        importance_sampling_level="sequence", seq_index=torch.tensor(SEQ), num_seqs=4,
    )
    terms.loss.backward()
    # One ratio per sequence: s = exp(mean log-ratio): exp(-0.1), exp(0.5), exp(0.1/3), exp(-0.4)
    s = [math.exp(-0.1), math.exp(0.5), math.exp(0.1 / 3), math.exp(-0.4)]
    # seq 0: A>0, s in range → -s·A per token; seq 1: A<0, s=1.65 → min is s·A (unclipped);
    # seq 2: A>0 in range; seq 3: A<0, s=0.67 < 0.8 → clipped to 0.8.
    expected_loss = 2 * W[0] * -s[0] * A1 + W[2] * s[1] * A1 + 3 * W[3] * -s[2] * A2 + W[6] * 0.8 * A2
    # d/dnew_j of Σ_i w·(-A)·s over a sequence of n tokens = n·w·(-A)·s/n = -w·A·s for each of its tokens.
    expected_grad = [-W[0] * s[0] * A1] * 2 + [W[2] * s[1] * A1] + [-W[3] * s[2] * A2] * 3 + [0.0]
    assert terms.loss.item() == pytest.approx(expected_loss, rel=1e-9)
    assert new.grad.tolist() == pytest.approx(expected_grad, rel=1e-9, abs=1e-12)


def test_kl_k3_term_and_gradient():
    new, old, adv, w = flat_batch()
    ref = torch.tensor([-1.2, -1.9, -0.4, -1.5, -0.9, -2.0, -1.4], dtype=torch.float64)
    beta = 0.05
    with_kl = grpo_loss(new, old, adv, w, loss_type="ppo", ref_lp=ref, beta=beta)
    with_kl.loss.backward()
    grad_with = new.grad.clone()
    new.grad = None
    without = grpo_loss(new, old, adv, w, loss_type="ppo")
    without.loss.backward()
    new_lp = [o + x for o, x in zip(OLD, LOG_RATIO)]
    d = [r - n for r, n in zip(ref.tolist(), new_lp)]
    k3 = [math.exp(x) - x - 1 for x in d]
    assert with_kl.kl.tolist() == pytest.approx(k3, rel=1e-12)
    assert all(k >= 0 for k in k3)
    assert with_kl.loss.item() - without.loss.item() == pytest.approx(beta * sum(W[i] * k3[i] for i in range(7)), rel=1e-9)
    # d/dnew k3 = -exp(ref-new) + 1
    extra = [beta * W[i] * (1 - math.exp(d[i])) for i in range(7)]
    assert (grad_with - new.grad).tolist() == pytest.approx(extra, rel=1e-9, abs=1e-15)
    assert k3_kl(torch.tensor([0.3]), torch.tensor([0.3])).item() == 0.0


def test_micro_batches_sum_to_the_full_batch_loss():
    """Weights are normalised over the whole step, so micro-batch losses add up to the full-batch loss."""
    req = TrainRequest.model_validate({
        "run_id": "r", "step": 1, "base_model": "m", "config": {},
        "groups": [
            {"samples": [
                {"trajectory_id": "a", "reward": 1, "sequences": [
                    {"tokens": [5, 6, 7], "mask": [0, 1, 1], "logprobs": [0, -1.0, -2.0]}]},
                # two sequences in one trajectory: 3 trained tokens in all → 1/3 each
                {"trajectory_id": "b", "reward": 0, "sequences": [
                    {"tokens": [5, 6], "mask": [0, 1], "logprobs": [0, -0.5]},
                    {"tokens": [5, 6, 8, 9, 4], "mask": [0, 0, 1, 1, 0], "logprobs": [0, 0, -1.5, -0.7, 0]}]},
            ]},
            {"samples": [{"trajectory_id": "c", "reward": 2, "sequences": [
                {"tokens": [1, 2], "mask": [0, 1], "logprobs": [0, -0.1]}]}]},  # alone: no variance
        ],
    })
    adv = compute_advantages([[s.reward for s in g.samples] for g in req.groups], True)
    assert (adv.groups_submitted, adv.groups_trainable) == (2, 1)
    rows = build_rows(req, adv)
    assert [r.weight for r in rows] == pytest.approx([1 / 4, 1 / 6, 1 / 6])  # 2 trajectories: (1/2)/2, (1/3)/2
    assert rows[2].tokens == [5, 6, 8, 9]  # cut after the last trained token
    one = micro_batches(rows, 8, 0, "cpu")
    many = micro_batches(rows, 1, 0, "cpu")
    assert sum(mb.num_tokens for mb in one) == sum(mb.num_tokens for mb in many) == 5

    def total(mbs):
        out = 0.0
        for mb in mbs:
            new = mb.old_lp * 0.8  # ratio differs per token, so the sum is not 0
            out += grpo_loss(new, mb.old_lp, mb.advantage, mb.weight).loss.item()
        return out

    assert abs(total(one)) > 1e-3
    assert total(one) == pytest.approx(total(many), rel=1e-6)
    assert float(sum(mb.weight.sum() for mb in many)) == pytest.approx(1.0)


# ---- advantages ------------------------------------------------------------------------------------


def test_advantages_grpo_and_dr_grpo():
    adv = compute_advantages([[1.0, 0.0], [3.0, 1.0, 2.0]], scale_rewards=True)
    assert adv.per_sample == [[pytest.approx(A1), pytest.approx(-A1)], [pytest.approx(A2), pytest.approx(-A2), None]]
    dr = compute_advantages([[1.0, 0.0], [3.0, 1.0, 2.0]], scale_rewards=False)
    assert dr.per_sample == [[0.5, -0.5], [1.0, -1.0, None]]


def test_zero_variance_groups_are_counted_and_skipped():
    adv = compute_advantages([[0.5, 0.5, 0.5], [1.0], [0.1 + 0.2, 0.3], [1.0, 0.0]], scale_rewards=True)
    assert adv.groups_submitted == 4
    assert adv.groups_trainable == 1  # 0.1+0.2 vs 0.3 differ by float noise only: no variance
    assert adv.per_sample[0] == [None, None, None]
    assert [g for g, _, _ in adv.trainable()] == [3, 3]
    none = compute_advantages([[2.0, 2.0], [0.0, 0.0]], scale_rewards=False)
    assert none.groups_trainable == 0 and none.trainable() == []


def test_pearson():
    x = torch.tensor([0.1, 0.5, 0.9])
    assert pearson(x, x) == pytest.approx(1.0)
    assert pearson(x, -x) == pytest.approx(-1.0)
    assert pearson(torch.tensor([0.3, 0.3]), torch.tensor([0.3, 0.3])) == 1.0
