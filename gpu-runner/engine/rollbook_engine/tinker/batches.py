"""Tinker datums → padded micro-batches in the trainer's own layout (trainer/batch.py's MicroBatch), so the
trainer's forward (`_selected_logits`) and memory check (`check_fits`) serve them unchanged.

The trainer's convention is "position t predicts token t+1 of the row": its rows hold the targets. Tinker's
datum holds the INPUT (`tokens`, T of them) and, separately, the target of each input position. So a row here
is `tokens` plus one padding token, with the mask on positions 1..T: the trainer then selects the outputs of
input positions 0..T-1 (the padding's own output is never used), and the targets are the datum's
target_tokens, carried beside the MicroBatch in the same flat order (row-major, datum by datum).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..contracts.tinker import TinkerDatum
from ..contracts.train import TrainerConfig
from ..trainer.batch import MicroBatch, chunk_rows
from .losses import LossInputs

_DEFAULTS = TrainerConfig()


@dataclass
class TinkerBatch:
    mb: MicroBatch  # row_ids: the datums' indices in the request, row_tokens: their lengths
    targets: torch.Tensor  # [N] flat target token ids
    inputs: LossInputs  # [N] flat per-position loss inputs (those the datums carry)


def _flat(values: list[list[float] | None], device) -> torch.Tensor | None:
    if any(v is None for v in values):
        return None  # tinker/checks.py made sure the loss's own inputs are all there
    return torch.tensor([x for v in values for x in v or []], dtype=torch.float32, device=device)


def tinker_batches(data: list[TinkerDatum], pad_id: int, device) -> list[TinkerBatch]:
    """Micro-batches of at most the trainer's default rows and padded tokens (TrainerConfig's micro_batch_size /
    micro_batch_tokens), longest datums first, as the trainer chunks its rows."""
    out = []
    for chunk in chunk_rows([len(d.tokens) + 1 for d in data], _DEFAULTS.micro_batch_size,
                            _DEFAULTS.micro_batch_tokens):
        datums = [data[i] for i in chunk]
        width = max(len(d.tokens) for d in datums) + 1
        ids = torch.full((len(datums), width), pad_id, dtype=torch.long)
        attn = torch.zeros((len(datums), width), dtype=torch.long)
        mask = torch.zeros((len(datums), width), dtype=torch.bool)
        for b, d in enumerate(datums):
            ids[b, : len(d.tokens)] = torch.tensor(d.tokens)
            attn[b, : len(d.tokens)] = 1
            mask[b, 1 : len(d.tokens) + 1] = True
        lengths = [len(d.tokens) for d in datums]
        n = sum(lengths)
        zeros = torch.zeros(n, device=device)
        mb = MicroBatch(
            input_ids=ids.to(device), attention_mask=attn.to(device), mask=mask.to(device),
            old_lp=zeros, advantage=zeros, weight=zeros,
            seq_index=torch.repeat_interleave(torch.arange(len(datums)), torch.tensor(lengths)).to(device),
            recomputed=torch.zeros(n, dtype=torch.bool, device=device), num_seqs=len(datums), has_recomputed=False,
            num_tokens=n, row_ids=list(chunk), row_tokens=lengths,
        )
        targets = torch.tensor([t for d in datums for t in d.target_tokens], dtype=torch.long, device=device)
        inputs = LossInputs(weights=_flat([d.weights for d in datums], device),
                            logprobs=_flat([d.logprobs for d in datums], device),
                            advantages=_flat([d.advantages for d in datums], device))
        out.append(TinkerBatch(mb=mb, targets=targets, inputs=inputs))
    return out
