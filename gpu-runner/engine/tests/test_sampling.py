"""The sampler's draw (inverse of the running sum) and nucleus set: the distribution asked for, nothing
outside the nucleus, the row's own generator deciding (no model needed)."""

from __future__ import annotations

import torch

from rollbook_engine.backends.transformers_backend import _draw, _nucleus, _sample_tokens


def test_draw_follows_the_distribution():
    probs = torch.tensor([0.5, 0.0, 0.3, 0.15, 0.05])
    gen = torch.Generator().manual_seed(7)
    n = 40_000
    counts = torch.bincount(torch.tensor([_draw(probs, gen) for _ in range(n)]), minlength=5).float() / n
    assert counts[1] == 0  # no mass, never drawn
    # 4 standard errors of a binomial proportion at n = 40,000: < 0.01 for every p here.
    assert torch.allclose(counts, probs, atol=0.01), counts


def test_draw_edges_never_pick_a_token_without_mass(monkeypatch):
    probs = torch.tensor([0.0, 0.0, 1.0, 0.0])
    gen = torch.Generator().manual_seed(0)
    # u = 0, u just under 1, and u·total rounded up to the total: always the one token with mass.
    for u in (0.0, 1.0 - 2**-24, 1.0):
        monkeypatch.setattr(torch, "rand", lambda *a, u=u, **k: torch.tensor([u], dtype=k.get("dtype", torch.float32)))
        assert _draw(probs, gen) == 2


def test_nucleus_keeps_the_smallest_top_set():
    probs = torch.softmax(torch.tensor([4.0, 3.0, 2.0, 1.0, 0.0, -1.0]), -1)
    kept, order = _nucleus(probs, 0.8)
    ids = order[kept > 0].tolist()
    assert ids == [0, 1]  # 0.64 + 0.24 ≥ 0.8, and 0.64 alone is not
    gen = torch.Generator().manual_seed(3)
    drawn = {int(order[_draw(kept, gen)]) for _ in range(500)}
    assert drawn == {0, 1}


def test_rows_depend_only_on_their_own_generator():
    logits = torch.randn(3, 1000, generator=torch.Generator().manual_seed(1))
    temps, top_ps = torch.tensor([1.0, 0.0, 0.7]), torch.tensor([1.0, 1.0, 0.9])

    def sample(seeds):
        gens = [torch.Generator().manual_seed(s) for s in seeds]
        return [_sample_tokens(logits, temps, top_ps, gens).tolist() for _ in range(5)]

    a, b = sample([1, 2, 3]), sample([1, 99, 3])
    assert a == b  # row 1 is greedy: its generator is unused; rows 0 and 2 keep their seeds
    assert [r[1] for r in a] == [int(logits[1].argmax())] * 5
    c = sample([4, 2, 3])
    assert [r[0] for r in c] != [r[0] for r in a]  # another seed, another row 0
    assert [r[2] for r in c] == [r[2] for r in a]


def test_nucleus_set_is_the_same_whichever_partial_sort_reaches_top_p():
    gen = torch.Generator().manual_seed(5)
    # The sets: 1 token (the top 256 reach top_p), 736 (the top 4,096 do), 46,144 (only the full sort does).
    for scale, top_p in ((8.0, 0.9), (3.0, 0.8), (0.1, 0.95)):
        probs = torch.softmax(torch.randn(49_152, generator=gen) * scale, -1)
        kept, order = _nucleus(probs, top_p)
        full_p, full_order = probs.sort(descending=True)
        n = int(((full_p.cumsum(-1) - full_p) < top_p).sum())
        assert set(order[kept > 0].tolist()) == set(full_order[:n].tolist())
        assert abs(float(kept.sum()) - float(full_p[:n].sum())) < 1e-5
