"""The model side of one sampling batch: prefill, rows joining, rows leaving, one decode step.

The sampling loop (transformers_backend.TransformersBackend._sample) drives a `DecodeRunner` and never
touches caches itself. Two runners:
- `LeanRunner`: decode_llama.LeanLlama with its in-place KV cache (Llama-family models; the CPU default).
- `HFRunner`: the transformers forward with a DynamicCache (every other model, or ROLLBOOK_LEAN_DECODE=0).
Both prefill the rows handed to them in one left-padded forward (a burst of joiners costs one prefill) — the
lean one row by row when batch-invariant (ROLLBOOK_BATCH_INVARIANT, the default: see decode_llama.py) — and
both serve a mix of adapters in one batch: each row names its PEFT adapter (BASE for the base model); the HF
runner hands the names to PEFT (`adapter_names`), the lean one adds each adapter's LoRA delta on its rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from .decode_llama import KVCache, LeanLlama, LoraSet

BASE = "__base__"  # PEFT's adapter name for "no adapter" in mixed batches


class DecodeRunner(Protocol):
    can_join: bool

    def accepts(self, names: Sequence[str]) -> bool:
        """Whether rows with these adapters can join this runner's batch."""

    def start(self, prompts: Sequence[list[int]], names: Sequence[str]) -> torch.Tensor:
        """Prefill the batch's first rows (`names`: each row's adapter); their next-token logits [n, vocab]."""

    def add(self, prompts: Sequence[list[int]], names: Sequence[str]) -> torch.Tensor:
        """Prefill rows joining the running batch (appended after the current rows); their logits."""

    def keep(self, rows: torch.Tensor) -> None:
        """Keep only these rows (indices into the current batch), in this order."""

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        """Feed one token per current row; the next logits [rows, vocab] (fp32)."""


def left_pad(prompts: Sequence[list[int]], pad_id: int, device: torch.device):
    """ids, valid mask and positions of left-padded prompts: every row's last token in the last column."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    valid = torch.zeros((len(prompts), width), dtype=torch.bool)
    for i, p in enumerate(prompts):
        ids[i, width - len(p):] = torch.tensor(p, dtype=torch.long)
        valid[i, width - len(p):] = True
    pos = (valid.long().cumsum(-1) - 1).clamp(min=0)
    return ids.to(device), valid.to(device), pos.to(device)


class LeanRunner:
    can_join = True

    def __init__(self, lean: LeanLlama, pad_id: int, device: torch.device, headroom: int) -> None:
        self.lean, self.pad_id, self.device, self.headroom = lean, pad_id, device, headroom
        self._sets: dict[str, LoraSet | None] = {}  # adapter name -> its deltas (pinned for the batch)
        self.names: list[str] = []
        self.loras: list[tuple[torch.Tensor | None, LoraSet]] = []
        self.cache: KVCache | None = None
        self.next_pos: torch.Tensor | None = None

    def accepts(self, names: Sequence[str]) -> bool:
        for name in set(names) - set(self._sets):
            try:
                self._sets[name] = self.lean.lora(None if name == BASE else name)
            except ValueError:
                return False
        return True

    def _groups(self, names: Sequence[str]) -> list[tuple[torch.Tensor | None, LoraSet]]:
        """(rows, deltas) per adapter in `names`; rows None when every row has that adapter."""
        if not self.accepts(names):
            raise ValueError(f"the lean decode path cannot serve adapters {sorted(set(names))}")
        out = []
        for name in dict.fromkeys(names):
            lset = self._sets[name]
            if lset is None:
                continue
            rows = [i for i, n in enumerate(names) if n == name]
            out.append((None if len(rows) == len(names) else torch.tensor(rows, device=self.device), lset))
        return out

    def _prefill(self, prompts: Sequence[list[int]], names: Sequence[str]):
        if self.lean.batch_invariant and len(prompts) > 1:
            # One prefill per row, spliced: each row's prefill then has the shape of its own prompt alone (no
            # padding, its own row count in every matmul), whatever it arrived with (decode_llama.py).
            parts = [self._prefill([p], [n]) for p, n in zip(prompts, names)]
            cache = parts[0][1]
            for _, more, _ in parts[1:]:
                cache.splice(more)
            return torch.cat([p[0] for p in parts]), cache, torch.cat([p[2] for p in parts])
        ids, valid, pos = left_pad(prompts, self.pad_id, self.device)
        cache = self.lean.new_cache(len(prompts), ids.shape[1] + self.headroom)
        logits = self.lean.forward(cache, ids, valid, pos, self._groups(names))
        return logits, cache, pos[:, -1] + 1

    def start(self, prompts, names):
        logits, self.cache, self.next_pos = self._prefill(prompts, names)
        self.names = list(names)
        self.loras = self._groups(self.names)
        return logits

    def add(self, prompts, names):
        assert self.cache is not None and self.next_pos is not None
        logits, cache, next_pos = self._prefill(prompts, names)
        self.cache.splice(cache)
        self.next_pos = torch.cat([self.next_pos, next_pos])
        self.names += names
        self.loras = self._groups(self.names)
        return logits

    def keep(self, rows):
        assert self.cache is not None and self.next_pos is not None
        self.cache.select(rows)
        self.next_pos = self.next_pos[rows]
        self.names = [self.names[i] for i in rows.tolist()]
        self.loras = self._groups(self.names)

    def step(self, tokens):
        assert self.cache is not None and self.next_pos is not None
        valid = torch.ones((tokens.shape[0], 1), dtype=torch.bool, device=self.device)
        logits = self.lean.forward(self.cache, tokens[:, None], valid, self.next_pos[:, None], self.loras)
        self.next_pos = self.next_pos + 1
        return logits


class HFRunner:
    def __init__(self, model: torch.nn.Module, pad_id: int, device: torch.device, join: bool) -> None:
        self.model, self.pad_id, self.device, self.join = model, pad_id, device, join
        self.can_join = join
        self.names: list[str] = []
        self.cache: DynamicCache | None = None
        self.mask: torch.Tensor | None = None
        self.next_pos: torch.Tensor | None = None

    def accepts(self, names):
        return True

    def _prefill(self, prompts, names):
        ids, valid, pos = left_pad(prompts, self.pad_id, self.device)
        mask = valid.long()
        cache = DynamicCache()
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=pos, past_key_values=cache,
                         use_cache=True, logits_to_keep=1, adapter_names=list(names))
        return out.logits[:, -1, :].float(), cache, mask, pos[:, -1:] + 1

    def start(self, prompts, names):
        logits, self.cache, self.mask, self.next_pos = self._prefill(prompts, names)
        self.names = list(names)
        # Joining means splicing KV caches; only plain DynamicLayers are spliced safely.
        self.can_join = self.join and all(type(layer) is DynamicLayer for layer in self.cache.layers)
        return logits

    def add(self, prompts, names):
        assert self.cache is not None and self.mask is not None and self.next_pos is not None
        logits, cache, mask, next_pos = self._prefill(prompts, names)
        self.names += names
        self.mask = _splice(self.cache, cache, self.mask, mask)
        self.next_pos = torch.cat([self.next_pos, next_pos])
        return logits

    def keep(self, rows):
        assert self.cache is not None and self.mask is not None and self.next_pos is not None
        self.cache.batch_select_indices(rows)
        self.mask, self.next_pos = self.mask[rows], self.next_pos[rows]
        self.names = [self.names[i] for i in rows.tolist()]

    def step(self, tokens):
        assert self.cache is not None and self.mask is not None and self.next_pos is not None
        self.mask = torch.cat([self.mask, self.mask.new_ones((self.mask.shape[0], 1))], dim=1)
        out = self.model(input_ids=tokens[:, None], attention_mask=self.mask, position_ids=self.next_pos,
                         past_key_values=self.cache, use_cache=True, adapter_names=self.names)
        self.next_pos = self.next_pos + 1
        return out.logits[:, -1, :].float()


def _splice(cache: DynamicCache, new: DynamicCache, mask: torch.Tensor, new_mask: torch.Tensor) -> torch.Tensor:
    """Append `new`'s rows to `cache`, left-padding the shorter side with masked-out zeros; returns the mask."""
    width = max(mask.shape[1], new_mask.shape[1])

    def lpad(t: torch.Tensor, dim: int) -> torch.Tensor:
        short = width - t.shape[dim]
        if short == 0:
            return t
        shape = list(t.shape)
        shape[dim] = short
        return torch.cat([t.new_zeros(shape), t], dim=dim)

    for layer, extra in zip(cache.layers, new.layers):
        layer.keys = torch.cat([lpad(layer.keys, 2), lpad(extra.keys, 2)])
        layer.values = torch.cat([lpad(layer.values, 2), lpad(extra.values, 2)])
    return torch.cat([lpad(mask, 1), lpad(new_mask, 1)])
