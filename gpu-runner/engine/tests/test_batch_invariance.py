"""Batch invariance of the lean decode path (backends/decode_llama.py, ROLLBOOK_BATCH_INVARIANT): a row's
logits are bit-identical whether it runs alone, starts beside rows of other lengths and adapters, joins a
running batch, or keeps running after others leave. Without it they differ in the last bits (the test of
that below shows what the setting is for), which is enough for a seeded sample to flip a token on a loaded
machine where other rollouts share the batch."""

from __future__ import annotations

import pytest
import torch
from peft import LoraConfig

from rollbook_engine.backends.decode_llama import LeanLlama
from rollbook_engine.backends.decode_step import BASE, LeanRunner
from rollbook_engine.model_store import ModelStore

ROW = [1, 9690, 198, 2683, 359, 253, 5356, 28, 7018]
OTHERS = [[1, 4093, 314, 260, 3807, 47], [1, 22, 33], [1, 504, 6781, 314, 253, 1762, 28, 2683, 359, 1128, 47, 198, 11, 12, 13]]
TOKENS = [28, 253, 1380, 30, 314, 2, 11]
ADAPTER = "invariance-test"


@pytest.fixture(scope="module")
def lean(tmp_path_factory):
    store = ModelStore(runs_dir=tmp_path_factory.mktemp("runs"))
    cfg = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0,
                     target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    store.model.add_adapter(ADAPTER, cfg)
    with torch.no_grad():
        gen = torch.Generator().manual_seed(0)
        for name, p in store.model.named_parameters():
            if "lora_B" in name and ADAPTER in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.05)
    return LeanLlama(store.model), store.tokenizer.pad_token_id, store.device


def alone(lean, name: str) -> list[torch.Tensor]:
    model, pad, dev = lean
    with torch.inference_mode():
        r = LeanRunner(model, pad, dev, headroom=2)
        out = [r.start([ROW], [name])[0].clone()]
        out += [r.step(torch.tensor([t]))[0].clone() for t in TOKENS]
    return out


def in_company(lean, name: str) -> list[torch.Tensor]:
    """The row starts beside two others (mixed adapters), a long row joins after two steps, one row leaves
    after four; the row under test is followed through all of it."""
    model, pad, dev = lean
    with torch.inference_mode():
        r = LeanRunner(model, pad, dev, headroom=2)
        first = r.start([OTHERS[0], ROW, OTHERS[1]], [BASE, name, ADAPTER])
        out, at = [first[1].clone()], 1
        for i, t in enumerate(TOKENS):
            if i == 2:
                r.add([OTHERS[2]], [ADAPTER])
            if i == 4:
                r.keep(torch.tensor([at, 2, 3]))
                at = 0
            rows = r.cache.batch if r.cache else 0
            logits = r.step(torch.tensor([t] * rows))
            out.append(logits[at].clone())
    return out


@pytest.mark.parametrize("name", [BASE, ADAPTER], ids=["base", "adapter"])
def test_a_rows_logits_do_not_depend_on_its_batch(lean, name):
    model = lean[0]
    assert model.batch_invariant, "ROLLBOOK_BATCH_INVARIANT is on by default"
    want, got = alone(lean, name), in_company(lean, name)
    for step, (a, b) in enumerate(zip(want, got)):
        assert torch.equal(a, b), f"step {step}: max |Δ| {(a - b).abs().max().item():.2e}"


def test_without_it_the_batch_changes_the_last_bits(lean, monkeypatch):
    """What the setting buys: the same comparison with it off differs (were this ever equal, the setting
    would cost time for nothing and should go)."""
    monkeypatch.setattr(LeanLlama, "batch_invariant", property(lambda self: False))
    want, got = alone(lean, ADAPTER), in_company(lean, ADAPTER)
    assert any(not torch.equal(a, b) for a, b in zip(want, got))
