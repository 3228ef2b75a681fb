"""A lean forward pass for Llama-family decoders (llama, mistral, qwen2), used by the sampling loop on CPU.

Why hand-written rather than the HF module tree: at batch 1-16 on a 135M model the HF forward spends most of
each decode step in Python and small ops (about 3,500 aten calls a token: LoRA wrappers, per-projection
matmuls, mask building, cache bookkeeping), not in the matmuls — measured 16-18 tok/s against llama.cpp's 61
on the same F32 weights. This path runs ~20 ops a layer on the SAME parameter tensors the HF model and the
trainer use (no copy of the weights: q/k/v and gate/up are re-laid into one tensor each and the HF
parameters become views of it, so one matmul serves three projections), a preallocated KV cache written in
place (static cache, grown by doubling when full), and the LoRA deltas of the active adapter(s) applied from
PEFT's own lora_A / lora_B / scaling. On a CPU with oneDNN the base projections are then multiplied by a
prepacked copy of those weights (`_Packed`, one more copy in memory; ROLLBOOK_PACKED_WEIGHTS=0 turns it off),
because past the Python overhead the matmuls themselves were the step's time. Rotary embeddings come from
the model's own rotary module (`rotary_emb`), so every RoPE variant the config names is honoured.

Batch-invariant (ROLLBOOK_BATCH_INVARIANT, on by default): a row's logits are bit-identical whatever other rows
share its batch, so a run's samples depend on its seeds and not on which rollouts happened to arrive together
(the property Thinking Machines' "Defeating Nondeterminism in LLM Inference", 2025, asks of an inference
server). Measured here, three things broke it on CPU, each fixed where it happens: (1) attention over a
left-padded cache — the masked columns change fp32's summation order (~1e-7), so decode attention runs in
float64 and is rounded back (0 of 30 padded/unpadded shapes differ); (2) oneDNN's prepacked matmul takes
another kernel for 1 row than for 2-64 (the down projection differed by 1e-5), so a 1-row decode step is
run as 2 rows; (3) MKL's F.linear (the LoRA deltas) rounds differently with the row count, so the deltas of a
decode step are computed in float64 and rounded back (a fixed 64-row block did it too, at 2.35x the 1-row
step time). Prefills are per row (backends/decode_step.py), so their shapes depend only on the row's own
prompt. tests/test_batch_invariance.py holds it.

It is exact up to float rounding (tests/test_decode_llama.py compares its logits with the HF forward, base
model and LoRA adapters, prefill and decode). Anything it does not model (another architecture, sliding
windows, DoRA, LoRA on other modules) is reported by `unsupported_reason` and the backend uses the HF path.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from ..settings import engine_settings

log = logging.getLogger(__name__)

SUPPORTED_TYPES = ("llama", "mistral", "qwen2")
_ATTN = ("q_proj", "k_proj", "v_proj", "o_proj")
_MLP = ("gate_proj", "up_proj", "down_proj")


def _base_linear(module: Any) -> torch.nn.Linear:
    """The plain nn.Linear under a PEFT LoRA wrapper (or the module itself when it is not wrapped)."""
    return getattr(module, "base_layer", module)


def _causal_lm(model: torch.nn.Module) -> Any:
    """The transformers *ForCausalLM inside a PeftModel (or the model itself). Typed Any: its config and
    submodules are attributes that torch's Module typing (Tensor | Module) cannot describe."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


def unsupported_reason(model: torch.nn.Module) -> str | None:
    """Why the lean path cannot serve `model` (None: it can)."""
    lm = _causal_lm(model)
    cfg = lm.config
    if cfg.model_type not in SUPPORTED_TYPES:
        return f"model_type {cfg.model_type!r} is not one of {SUPPORTED_TYPES}"
    if getattr(cfg, "hidden_act", "silu") != "silu":
        return f"hidden_act {cfg.hidden_act!r}"
    if getattr(cfg, "sliding_window", None) and getattr(cfg, "use_sliding_window", True):
        return "sliding-window attention"
    if not hasattr(lm, "model") or not hasattr(lm.model, "rotary_emb") or not hasattr(lm, "lm_head"):
        return "no model.rotary_emb / lm_head"
    return None


@dataclass
class _Lora:
    a: torch.Tensor  # [r, in]
    b: torch.Tensor  # [out, r]
    scale: float
    lo: int  # columns of the (fused) projection output it adds to
    hi: int
    a64: torch.Tensor | None = None  # float64 copies for batch-invariant decode steps (small: r × in, out × r)
    b64: torch.Tensor | None = None

    def wide(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.a64 is None or self.b64 is None:
            self.a64, self.b64 = self.a.detach().double(), self.b.detach().double()
        return self.a64, self.b64


class LoraSet:
    """The LoRA deltas of one adapter, per layer and per fused projection ("qkv", "o", "gate_up", "down")."""

    def __init__(self, per_layer: list[dict[str, list[_Lora]]]) -> None:
        self.per_layer = per_layer


class KVCache:
    """Per-layer K/V of a batch of left-padded rows: [B, kv_heads, capacity, head_dim], written in place.

    Every row writes the same column at each step (the batch's `width`); a row's padding columns are
    masked out by `valid`. Rows leave with `select`, new rows arrive with `splice` (both copy, once per
    finished / joining group, not per token)."""

    def __init__(self, layers: int, batch: int, kv_heads: int, head_dim: int, capacity: int,
                 dtype: torch.dtype, device: torch.device) -> None:
        shape = (batch, kv_heads, capacity, head_dim)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(layers)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(layers)]
        self.valid = torch.zeros((batch, capacity), dtype=torch.bool, device=device)
        self.width = 0

    @property
    def capacity(self) -> int:
        return self.valid.shape[1]

    @property
    def batch(self) -> int:
        return self.valid.shape[0]

    def reserve(self, extra: int) -> None:
        """Room for `extra` more columns, doubling the capacity when it runs out."""
        need = self.width + extra
        if need <= self.capacity:
            return
        cap = max(need, 2 * self.capacity)
        self.k = [_grow(t, cap, 2) for t in self.k]
        self.v = [_grow(t, cap, 2) for t in self.v]
        self.valid = _grow(self.valid, cap, 1)

    def select(self, rows: torch.Tensor) -> None:
        self.k = [t.index_select(0, rows) for t in self.k]
        self.v = [t.index_select(0, rows) for t in self.v]
        self.valid = self.valid.index_select(0, rows)
        # Columns that are padding for every remaining row (a long prompt left) are dropped.
        first = int(self.valid[:, :self.width].any(0).nonzero()[0]) if self.width and self.valid.any() else 0
        if first:
            self.k = [t[:, :, first:].contiguous() for t in self.k]
            self.v = [t[:, :, first:].contiguous() for t in self.v]
            self.valid = self.valid[:, first:].contiguous()
            self.width -= first

    def splice(self, other: KVCache) -> None:
        """Append `other`'s rows; the narrower side is left-padded so both end at the same column."""
        width = max(self.width, other.width)
        cap = max(self.capacity - self.width, other.capacity - other.width) + width

        def place(t: torch.Tensor, w: int, dim: int) -> torch.Tensor:
            shape = list(t.shape)
            shape[dim] = cap
            out = t.new_zeros(shape)
            out.narrow(dim, width - w, w).copy_(t.narrow(dim, 0, w))
            return out

        self.k = [torch.cat([place(a, self.width, 2), place(b, other.width, 2)]) for a, b in zip(self.k, other.k)]
        self.v = [torch.cat([place(a, self.width, 2), place(b, other.width, 2)]) for a, b in zip(self.v, other.v)]
        self.valid = torch.cat([place(self.valid, self.width, 1), place(other.valid, other.width, 1)])
        self.width = width


def _linear_rows(packed: _Packed, x: torch.Tensor, bias: torch.Tensor | None, invariant: bool) -> torch.Tensor:
    """A prepacked projection; with `invariant`, a single row is multiplied as two (oneDNN's 1-row kernel
    rounds differently from its 2-64-row one, which agree with each other)."""
    rows = x.numel() // x.shape[-1]
    if not invariant or rows != 1:
        return packed(x, bias)
    flat = x.reshape(1, x.shape[-1])
    return packed(torch.cat([flat, flat]), bias)[:1].reshape(*x.shape[:-1], -1)


def _lora_delta(x: torch.Tensor, d: _Lora) -> torch.Tensor:
    return F.linear(F.linear(x, d.a), d.b) * d.scale


def _lora_block(x: torch.Tensor, d: _Lora) -> torch.Tensor:
    """The LoRA delta of a decode step, in float64 and rounded back: MKL rounds a row's fp32 product
    differently with the row count; summed in float64 the order no longer reaches the fp32 result."""
    a, b = d.wide()
    return (F.linear(F.linear(x.double(), a), b) * d.scale).to(x.dtype)


def _grow(t: torch.Tensor, cap: int, dim: int) -> torch.Tensor:
    shape = list(t.shape)
    shape[dim] = cap
    out = t.new_zeros(shape)
    out.narrow(dim, 0, t.shape[dim]).copy_(t)
    return out


def packing_wanted(weight: torch.Tensor) -> bool:
    """Whether the base weights get oneDNN's prepacked copy (see `_Packed`): fp32 on a CPU with oneDNN, unless
    ROLLBOOK_PACKED_WEIGHTS=0 (it costs one more copy of the base model's projection weights in memory)."""
    if not engine_settings().packed_weights:
        return False
    return weight.device.type == "cpu" and weight.dtype == torch.float32 and torch.backends.mkldnn.is_available()


class _Packed:
    """A base weight in oneDNN's blocked layout, multiplied by oneDNN's own kernel — what inductor's CPU
    freezing does to a Linear (`mkldnn._reorder_linear_weight` / `_linear_pointwise`). Why: for the 1-16 rows
    of a decode step, MKL's GEMM on the [out, in] weight reaches about half the memory bandwidth; on this
    machine the same 30 layers + lm_head took 43.5 ms at 1 row and 78.5 ms at 16 through F.linear, 21.9 ms
    and 29.8 ms prepacked (bench/profile_decode.py shows the step). The numbers are the same weights in
    another order (max |Δ| ~5e-6 on a projection); the HF parameters stay as they are for the trainer."""

    def __init__(self, weight: torch.Tensor) -> None:
        with torch.inference_mode(False), torch.no_grad():
            self.weight = torch.ops.mkldnn._reorder_linear_weight(weight.detach(), None)

    def __call__(self, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x, self.weight, bias, "none", [], "")


# Rows (batch × new tokens) up to which a projection goes through the prepacked weight: every decode step
# (one new token a row, at most the engine's batch) and small prefills. Why a bound: oneDNN keeps a primitive
# per input shape in its cache, with buffers that grow with the rows — measured ~40 MB per distinct prefill of
# ~9,000 rows over the four projection shapes, and an engine grew to 20 GB in 25 minutes of varied multi-turn
# prompts before the kernel's OOM killer stopped it. At most this many distinct small shapes are cached, and
# large prefills (where MKL's GEMM through F.linear is within ~25% anyway) cache nothing.
PACKED_MAX_ROWS = 64


def _try_pack(weights: list[torch.Tensor]) -> list[_Packed] | None:
    """Prepacked copies of `weights`, or None where this torch cannot (the plain F.linear path is used)."""
    try:
        return [_Packed(w) for w in weights]
    except (RuntimeError, AttributeError) as err:  # a torch without these oneDNN ops
        log.info("prepacked decode weights unavailable (%s): F.linear", err)
        return None


class LeanLlama:
    """Prefill and decode steps over the model's own weights; see the module docstring."""

    def __init__(self, model: torch.nn.Module) -> None:
        reason = unsupported_reason(model)
        if reason:
            raise ValueError(f"lean decode cannot serve this model: {reason}")
        self.peft_model = model
        lm = _causal_lm(model)
        cfg = lm.config
        self.lm = lm
        self.rotary = lm.model.rotary_emb
        self.embed = _base_linear(lm.model.embed_tokens).weight
        self.norm = lm.model.norm
        self.lm_head = _base_linear(lm.lm_head)
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.scaling = self.head_dim ** -0.5
        self.hidden = cfg.hidden_size
        self.layers = list(lm.model.layers)
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        # Column ranges of each projection inside the fused outputs.
        self.spans = {"q_proj": ("qkv", 0, q), "k_proj": ("qkv", q, q + kv), "v_proj": ("qkv", q + kv, q + 2 * kv),
                      "o_proj": ("o", 0, cfg.hidden_size),
                      "gate_proj": ("gate_up", 0, cfg.intermediate_size),
                      "up_proj": ("gate_up", cfg.intermediate_size, 2 * cfg.intermediate_size),
                      "down_proj": ("down", 0, cfg.hidden_size)}
        self.fused = [self._fuse(layer) for layer in self.layers]
        self.packed: list[dict[str, _Packed]] | None = None
        self.packed_head: _Packed | None = None
        if packing_wanted(self.embed):
            names = ("qkv", "o", "gate_up", "down")
            flat = _try_pack([f[n][0] for f in self.fused for n in names] + [self.lm_head.weight])
            if flat is not None:
                self.packed = [dict(zip(names, flat[i * 4:i * 4 + 4])) for i in range(len(self.layers))]
                self.packed_head = flat[-1]

    @staticmethod
    def _fuse(layer: torch.nn.Module) -> dict[str, tuple[torch.Tensor, torch.Tensor | None]]:
        """One weight for q/k/v and one for gate/up; the HF parameters are re-pointed at slices of it, so the
        memory is not doubled and the HF forward (training, fallback) reads the very same numbers."""
        attn, mlp = layer.self_attn, layer.mlp

        def fuse(mods: Sequence[torch.nn.Linear]) -> tuple[torch.Tensor, torch.Tensor | None]:
            # Outside inference mode even when built from a sampling batch: an inference tensor could never
            # take part in the trainer's autograd graph again.
            with torch.inference_mode(False), torch.no_grad():
                weight = torch.cat([m.weight for m in mods])
                bias = torch.cat([m.bias for m in mods]) if mods[0].bias is not None else None
                at = 0
                for m in mods:
                    n = m.weight.shape[0]
                    m.weight.data = weight[at:at + n]
                    if bias is not None:
                        m.bias.data = bias[at:at + n]
                    at += n
            return weight, bias

        lin = {name: _base_linear(getattr(attn, name)) for name in _ATTN}
        lin.update({name: _base_linear(getattr(mlp, name)) for name in _MLP})
        return {"qkv": fuse([lin["q_proj"], lin["k_proj"], lin["v_proj"]]),
                "o": (lin["o_proj"].weight, lin["o_proj"].bias),
                "gate_up": fuse([lin["gate_proj"], lin["up_proj"]]),
                "down": (lin["down_proj"].weight, lin["down_proj"].bias)}

    def lora(self, adapter: str | None) -> LoraSet | None:
        """The deltas of PEFT adapter `adapter` (None: the base model). Read afresh on every call: a
        checkpoint reloaded under the same name gets new tensors. ValueError for what the lean path does not
        model (DoRA, LoRA bias, LoRA on modules other than the seven projections)."""
        if adapter is None:
            return None
        known: set[int] = set()
        per_layer: list[dict[str, list[_Lora]]] = []
        for layer in self.layers:
            found: dict[str, list[_Lora]] = {}
            for parent, names in ((layer.self_attn, _ATTN), (layer.mlp, _MLP)):
                for name in names:
                    mod = getattr(parent, name)
                    if adapter not in getattr(mod, "lora_A", {}):
                        continue
                    known.add(id(mod))
                    if getattr(mod, "use_dora", {}).get(adapter) or getattr(mod, "lora_bias", {}).get(adapter):
                        raise ValueError(f"adapter {adapter!r} uses DoRA / LoRA bias")
                    fused, lo, hi = self.spans[name]
                    found.setdefault(fused, []).append(
                        _Lora(mod.lora_A[adapter].weight, mod.lora_B[adapter].weight, float(mod.scaling[adapter]), lo, hi))
            per_layer.append(found)
        for mod in self.lm.modules():
            if adapter in (getattr(mod, "lora_A", None) or {}) and id(mod) not in known:
                raise ValueError(f"adapter {adapter!r} adapts a module the lean path does not model")
            if adapter in (getattr(mod, "lora_embedding_A", None) or {}):
                raise ValueError(f"adapter {adapter!r} adapts the embeddings")
        return LoraSet(per_layer)

    @property
    def batch_invariant(self) -> bool:
        return engine_settings().batch_invariant

    def new_cache(self, batch: int, capacity: int) -> KVCache:
        return KVCache(len(self.layers), batch, self.kv_heads, self.head_dim, capacity, self.embed.dtype,
                       self.embed.device)

    def _proj(self, x: torch.Tensor, layer: int, which: str, loras: list[tuple[torch.Tensor | None, LoraSet]]):
        weight, bias = self.fused[layer][which]
        rows = x.numel() // x.shape[-1]
        if self.packed is not None and rows <= PACKED_MAX_ROWS:
            out = _linear_rows(self.packed[layer][which], x, bias, self.batch_invariant)
        else:
            out = F.linear(x, weight, bias)
        decode = x.shape[-2] == 1 and self.batch_invariant
        for sel, lset in loras:
            for d in lset.per_layer[layer].get(which, ()):
                xs = x if sel is None else x[sel]
                delta = (_lora_block if decode else _lora_delta)(xs, d)
                if sel is None:
                    out[..., d.lo:d.hi] += delta
                else:
                    out[sel, ..., d.lo:d.hi] += delta
        return out

    def forward(self, cache: KVCache, ids: torch.Tensor, valid: torch.Tensor, positions: torch.Tensor,
                loras: Sequence[tuple[torch.Tensor | None, LoraSet]] = ()) -> torch.Tensor:
        """Run `ids` [B, L] (new tokens, left-padded where `valid` [B, L] is False, at `positions` [B, L])
        through the model, appending their K/V to `cache`; returns the last column's logits [B, vocab] (fp32).
        `loras`: (row indices or None for every row, adapter deltas) pairs."""
        loras = [(rows, lset) for rows, lset in loras if lset is not None]
        batch, new = ids.shape
        cache.reserve(new)
        start, end = cache.width, cache.width + new
        cache.valid[:, start:end] = valid
        # allowed[b, i, j]: query i (column start+i) may see key column j: valid and not in the future. A
        # padding query sees only itself, so its (unused) softmax has no empty row (which would give NaN).
        keys = cache.valid[:, :end]
        if new == 1:
            allowed = keys[:, None, None, :]
        else:
            cols = torch.arange(end, device=ids.device)
            causal = cols[None, :] <= (start + torch.arange(new, device=ids.device))[:, None]  # [L, end]
            allowed = keys[:, None, :] & causal[None]
            pad_q = ~valid
            if bool(pad_q.any()):
                eye = torch.zeros((new, end), dtype=torch.bool, device=ids.device)
                eye[torch.arange(new), start + torch.arange(new)] = True
                allowed = allowed | (pad_q[:, :, None] & eye[None])
            allowed = allowed[:, None]
        h = F.embedding(ids, self.embed)
        cos, sin = self.rotary(h, positions)
        cos, sin = cos[:, None], sin[:, None]  # [B, 1, L, D]
        half = self.head_dim // 2
        q_dim, kv_dim = self.heads * self.head_dim, self.kv_heads * self.head_dim
        for i, layer in enumerate(self.layers):
            attn_norm, mlp_norm = layer.input_layernorm, layer.post_attention_layernorm
            x = F.rms_norm(h, (self.hidden,), attn_norm.weight, attn_norm.variance_epsilon)
            qkv = self._proj(x, i, "qkv", loras)
            # Rotary on q and k heads together (one set of ops, not two): [B, heads + kv_heads, L, D].
            qk = qkv[..., :q_dim + kv_dim].view(batch, new, self.heads + self.kv_heads, self.head_dim).transpose(1, 2)
            qk = qk * cos + torch.cat((-qk[..., half:], qk[..., :half]), dim=-1) * sin
            q, k = qk[:, :self.heads], qk[:, self.heads:]
            v = qkv[..., q_dim + kv_dim:].view(batch, new, self.kv_heads, self.head_dim).transpose(1, 2)
            cache.k[i][:, :, start:end] = k
            cache.v[i][:, :, start:end] = v
            keys, values = cache.k[i][:, :, :end], cache.v[i][:, :, :end]
            if new == 1 and self.batch_invariant:
                # float64, rounded back: the padding columns other rows bring cannot change this row's sums.
                o = F.scaled_dot_product_attention(q.double(), keys.double(), values.double(), attn_mask=allowed,
                                                   scale=self.scaling, enable_gqa=self.heads != self.kv_heads).to(q.dtype)
            else:
                o = F.scaled_dot_product_attention(q, keys, values, attn_mask=allowed,
                                                   scale=self.scaling, enable_gqa=self.heads != self.kv_heads)
            o = o.transpose(1, 2).reshape(batch, new, q_dim)
            h = h + self._proj(o, i, "o", loras)
            x = F.rms_norm(h, (self.hidden,), mlp_norm.weight, mlp_norm.variance_epsilon)
            gate_up = self._proj(x, i, "gate_up", loras)
            inter = gate_up.shape[-1] // 2
            h = h + self._proj(F.silu(gate_up[..., :inter]) * gate_up[..., inter:], i, "down", loras)
        cache.width = end
        last = F.rms_norm(h[:, -1], (self.hidden,), self.norm.weight, self.norm.variance_epsilon)
        head_bias = getattr(self.lm_head, "bias", None)
        if self.packed_head is not None and last.shape[0] <= PACKED_MAX_ROWS:
            return _linear_rows(self.packed_head, last, head_bias, self.batch_invariant).float()
        return F.linear(last, self.lm_head.weight, head_bias).float()
