"""The lean Llama forward (backends/decode_llama.py) against the transformers forward on the real SmolLM2:
same logits for the base model, a LoRA adapter and a batch mixing both, through left-padded prefill, decode
steps, rows leaving and rows joining; the weights it fuses stay shared with (and trainable around) the HF
model. The reference runs one row at a time with no padding and no cache, so it shares nothing with the
path under test but the weights."""

from __future__ import annotations

import pytest
import torch
from peft import LoraConfig
from transformers import DynamicCache

from rollbook_engine.backends.decode_llama import LeanLlama, unsupported_reason
from rollbook_engine.backends.decode_step import BASE, LeanRunner, left_pad
from rollbook_engine.model_store import ModelStore

PROMPTS = [[1, 9690, 198, 2683, 359, 253, 5356, 28, 7018], [1, 4093, 314, 260, 3807, 47], [1, 22, 33]]
ADAPTER = "lean-test"
TOL = 2e-3  # fp32 logits of magnitude ~10-30; summation order differs (fused matmuls, SDPA paths)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = ModelStore(runs_dir=tmp_path_factory.mktemp("runs"))
    cfg = LoraConfig(r=4, lora_alpha=16, lora_dropout=0.0,
                     target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    store.model.add_adapter(ADAPTER, cfg)
    with torch.no_grad():
        gen = torch.Generator().manual_seed(0)
        for name, p in store.model.named_parameters():
            if "lora_B" in name and ADAPTER in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.05)
    return store


def reference(store, name: str, seq: list[int]) -> torch.Tensor:
    """The HF forward (PEFT's own LoRA layers) on one full sequence: its last-position logits."""
    with store.use_adapter(None if name == BASE else name) as model:
        return model(input_ids=torch.tensor([seq]), past_key_values=DynamicCache()).logits[0, -1].float()


def hf_next_logits(store, names: list[str], prompts: list[list[int]], steps: list[list[int]]) -> list[torch.Tensor]:
    """Reference logits of every row after 0, 1, ... steps."""
    out = []
    for t in range(len(steps[0]) + 1):
        out.append(torch.stack([reference(store, n, p + s[:t]) for n, p, s in zip(names, prompts, steps)]))
    return out


@pytest.mark.parametrize("names", [[BASE] * 3, [ADAPTER] * 3, [ADAPTER, BASE, ADAPTER]],
                         ids=["base", "adapter", "mixed"])
def test_lean_logits_match_transformers(store, names):
    steps = [[28, 253, 1380], [30, 314, 2], [198, 198, 11]]
    with torch.inference_mode():
        expected = hf_next_logits(store, names, PROMPTS, steps)
    lean = LeanLlama(store.model)
    # On a CPU with oneDNN the projections are multiplied by the prepacked copies: that is the path compared.
    assert (lean.packed is not None) == (store.device.type == "cpu" and torch.backends.mkldnn.is_available())
    lora = lean.lora(ADAPTER)
    assert lora is not None and all(len(layer) == 4 for layer in lora.per_layer)  # qkv, o, gate_up, down
    with torch.inference_mode():
        runner = LeanRunner(lean, store.tokenizer.pad_token_id, store.device, headroom=1)
        got = [runner.start(PROMPTS, names)]  # headroom 1: the cache has to grow on the way
        for t in range(len(steps[0])):
            got.append(runner.step(torch.tensor([s[t] for s in steps])))
    for want, have in zip(expected, got):
        assert have.shape == want.shape
        assert (have - want).abs().max().item() < TOL
        assert torch.equal(have.argmax(-1), want.argmax(-1))


def test_rows_leave_and_join_with_exact_logits(store):
    """Row 1 leaves after the first step; a new row joins (one prefill) and the survivors keep their
    logits as if each ran alone."""
    joiner = [1, 504, 6781, 314, 253, 1762, 28, 2683, 359, 1128, 47, 198]  # longer than any running row
    lean = LeanLlama(store.model)
    with torch.inference_mode():
        runner = LeanRunner(lean, store.tokenizer.pad_token_id, store.device, headroom=8)
        runner.start(PROMPTS, [BASE, ADAPTER, BASE])
        runner.step(torch.tensor([28, 30, 198]))
        runner.keep(torch.tensor([0, 2]))
        joined = runner.add([joiner], [ADAPTER])
        got = runner.step(torch.tensor([253, 198, 11]))
        ref_join = reference(store, ADAPTER, joiner)
        ref = [reference(store, n, seq) for n, seq in
               ((BASE, PROMPTS[0] + [28, 253]), (BASE, PROMPTS[2] + [198, 198]), (ADAPTER, joiner + [11]))]
    assert (joined[0] - ref_join).abs().max().item() < TOL
    for i, want in enumerate(ref):
        assert (got[i] - want).abs().max().item() < TOL, i


def test_fused_weights_are_shared_and_training_still_works(store):
    lean = LeanLlama(store.model)
    attn = store.model.get_base_model().model.layers[0].self_attn
    q = getattr(attn.q_proj, "base_layer", attn.q_proj).weight
    k = getattr(attn.k_proj, "base_layer", attn.k_proj).weight
    fused = lean.fused[0]["qkv"][0]
    assert q.data_ptr() == fused.data_ptr()  # a view, not a copy
    assert k.data_ptr() == fused[q.shape[0]:].data_ptr()
    assert not fused.is_inference()
    # The trainer's autograd still runs through the (re-pointed) base weights into the LoRA parameters.
    store.model.set_adapter(ADAPTER)
    store.model.train()
    loss = store.model(input_ids=torch.tensor([PROMPTS[0]])).logits.float().logsumexp(-1).mean()
    loss.backward()
    grads = [p.grad for n, p in store.model.named_parameters() if ADAPTER in n and "lora_A" in n]
    assert grads and all(g is not None for g in grads)
    store.model.zero_grad(set_to_none=True)
    store.model.eval()


def test_unsupported_models_are_named(store):
    assert unsupported_reason(store.model) is None
    store.model.get_base_model().config.model_type = "gemma"
    try:
        assert "gemma" in (unsupported_reason(store.model) or "")
    finally:
        store.model.get_base_model().config.model_type = "llama"


def test_left_pad_positions():
    ids, valid, pos = left_pad([[5, 6, 7], [8]], pad_id=0, device=torch.device("cpu"))
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert valid.tolist() == [[True, True, True], [False, False, True]]
    assert pos.tolist() == [[0, 1, 2], [0, 0, 0]]


def test_prefills_of_many_shapes_leave_no_memory_behind(store):
    """oneDNN caches a primitive per input shape, with buffers growing with the rows: prefills (a new shape
    almost every time) must not go through the prepacked weights, or memory grows ~40 MB a prompt length."""
    import psutil

    lean = LeanLlama(store.model)
    if lean.packed is None:
        pytest.skip("no prepacked weights on this device")
    widths = {"qkv": lean.hidden, "o": lean.heads * lean.head_dim, "gate_up": lean.hidden,
              "down": lean.fused[0]["down"][0].shape[1]}
    proc = psutil.Process()

    def prefill_projections(rows: int) -> None:
        for which, width in widths.items():
            lean._proj(torch.randn(8, rows // 8, width), 0, which, [])

    with torch.inference_mode():
        prefill_projections(2_400)  # warm-up: allocator pools, MKL's buffers
        before = proc.memory_info().rss
        for i in range(12):  # twelve prompt lengths, as a run's varied prompts give
            prefill_projections(2_400 + 64 * (i + 1))
        grown = proc.memory_info().rss - before
    assert grown < 150 * 2**20, f"{grown / 2**20:.0f} MB kept after 12 prefill shapes"
