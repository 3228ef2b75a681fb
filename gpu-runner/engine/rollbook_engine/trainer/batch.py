"""Turn a TrainRequest into flat training rows and padded micro-batches.

Checks here are the ones the schema cannot express (they need the model): token ids inside the vocabulary,
length within the context, no trained token at position 0 (nothing predicts it), sampling logprobs that
exist (or all 0 where a sequence says `recomputed_logprobs`: the trainer computes those). Each failure names the field path, e.g. `groups.0.samples.2.sequences.0.mask.0`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..contracts.train import TrainRequest
from .advantages import Advantages
from .loss import trajectory_weights

# A sampling logprob must be ≤ 0; allow float noise from the sampler's softmax.
_LOGPROB_SLACK = 1e-3
# This many trained tokens all with logprob exactly 0.0 means the logprobs were never filled in (ART: missing
# sampling logprobs silently turn the update into REINFORCE, so treat them as an error).
_MISSING_LOGPROBS_MIN_TOKENS = 4


class BadRequest(ValueError):
    """Invalid input for this model; `field` is the JSON path, `status` the HTTP code to answer with."""

    def __init__(self, field: str, message: str, status: int = 422):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.status = status


def validate_sequences(req: TrainRequest, vocab_size: int, max_context_tokens: int) -> None:
    for g, group in enumerate(req.groups):
        for s, sample in enumerate(group.samples):
            for q, seq in enumerate(sample.sequences):
                path = f"groups.{g}.samples.{s}.sequences.{q}"
                if len(seq.tokens) > max_context_tokens:
                    raise BadRequest(f"{path}.tokens", f"{len(seq.tokens)} tokens exceed the context of {max_context_tokens}")
                bad = next((i for i, t in enumerate(seq.tokens) if t >= vocab_size), None)
                if bad is not None:
                    raise BadRequest(f"{path}.tokens.{bad}", f"token id {seq.tokens[bad]} ≥ vocabulary size {vocab_size}")
                if seq.mask and seq.mask[0] == 1:
                    raise BadRequest(f"{path}.mask.0", "the first token cannot be trained: no earlier token predicts it")
                if seq.recomputed_logprobs:
                    # No sampling logprobs: the trainer computes them, so any other value is a caller's mix-up.
                    bad = next((i for i, lp in enumerate(seq.logprobs) if lp != 0.0), None)  # NaN != 0 too
                    if bad is not None:
                        raise BadRequest(f"{path}.logprobs.{bad}", f"is {seq.logprobs[bad]}, but must be 0 with "
                                         "recomputed_logprobs: true (the trainer computes them)")
                    continue
                trained = [i for i, m in enumerate(seq.mask) if m == 1]
                for i in trained:
                    if not seq.logprobs[i] <= _LOGPROB_SLACK:  # also catches NaN
                        raise BadRequest(f"{path}.logprobs.{i}", f"sampling logprob {seq.logprobs[i]} must be ≤ 0")
                if len(trained) >= _MISSING_LOGPROBS_MIN_TOKENS and all(seq.logprobs[i] == 0.0 for i in trained):
                    raise BadRequest(f"{path}.logprobs", "every trained token has logprob 0: sampling logprobs look "
                                     "missing (recomputed_logprobs: true trains without them)")


@dataclass
class Row:
    """One sequence that trains: tokens cut after its last trained token (later tokens change nothing)."""

    tokens: list[int]
    mask: list[int]
    old_logprobs: list[float]
    advantage: float
    weight: float  # per trained token
    seq_id: int  # index among all rows, for GSPO's per-sequence ratio
    # Where the row came from, so the trainer's per-token logprobs go back to the sample's sequence.
    trajectory_id: str = ""
    sequence: int = 0  # index in the sample's sequences
    # No sampling logprobs (old_logprobs are 0): the trainer uses the policy's own before the update.
    recomputed: bool = False


def build_rows(req: TrainRequest, adv: Advantages) -> list[Row]:
    """Rows of every trainable sample, with per-token weights 1/(trained tokens of the trajectory), renormalised."""
    picked = adv.trainable()
    counts = [
        sum(sum(seq.mask) for seq in req.groups[g].samples[s].sequences) for g, s, _ in picked
    ]
    weights = trajectory_weights(counts)
    rows: list[Row] = []
    for (g, s, a), w in zip(picked, weights):
        sample = req.groups[g].samples[s]
        for q, seq in enumerate(sample.sequences):
            if not any(seq.mask):
                continue
            end = max(i for i, m in enumerate(seq.mask) if m) + 1
            rows.append(
                Row(
                    tokens=list(seq.tokens[:end]),
                    mask=list(seq.mask[:end]),
                    old_logprobs=list(seq.logprobs[:end]),
                    advantage=a,
                    weight=w,
                    seq_id=len(rows),
                    trajectory_id=sample.trajectory_id,
                    sequence=q,
                    recomputed=bool(seq.recomputed_logprobs),
                )
            )
    return rows


@dataclass
class MicroBatch:
    input_ids: torch.Tensor  # [B, T] right-padded
    attention_mask: torch.Tensor  # [B, T]
    mask: torch.Tensor  # [B, T] bool, trained tokens
    # flat, one entry per trained token, row-major (row, position) order, matching mask[:, 1:] selection
    old_lp: torch.Tensor
    advantage: torch.Tensor
    weight: torch.Tensor
    seq_index: torch.Tensor  # local row index of each token (0..B-1)
    # flat bool: the token's sequence has recomputed_logprobs (old_lp is 0 there until the trainer fills it)
    recomputed: torch.Tensor
    num_seqs: int
    has_recomputed: bool  # any of `recomputed` (known without reading the device tensor)
    num_tokens: int
    # Indices into the step's rows, in this batch's row order; the flat tensors hold row_tokens[b]
    # entries for row b, one after another.
    row_ids: list[int] = field(default_factory=list)
    row_tokens: list[int] = field(default_factory=list)


def chunk_rows(lengths: list[int], size: int, max_tokens: int | None) -> list[list[int]]:
    """Row indices per micro-batch: longest first (stable), so each micro-batch pads little; at most `size` rows
    and at most `max_tokens` padded tokens (rows × the first, longest row's length) each. Memory follows the
    padded tokens, not the rows: a micro-batch of 8 rows of 1,500 tokens holds ~4× what 8 of 400 do. A row
    longer than `max_tokens` goes alone (it cannot be split: its tokens attend to each other)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    chunks: list[list[int]] = []
    for i in order:
        last = chunks[-1] if chunks else None
        if last and len(last) < size and (max_tokens is None or (len(last) + 1) * lengths[last[0]] <= max_tokens):
            last.append(i)
        else:
            chunks.append([i])
    return chunks


def micro_batches(rows: list[Row], size: int, pad_id: int, device, max_tokens: int | None = None) -> list[MicroBatch]:
    """Pad and stack the rows of each chunk_rows chunk (right padding, flat per-trained-token tensors)."""
    out = []
    for ids_in_chunk in chunk_rows([len(r.tokens) for r in rows], size, max_tokens):
        chunk = [rows[i] for i in ids_in_chunk]
        width = max(len(r.tokens) for r in chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        attn = torch.zeros((len(chunk), width), dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.bool)
        old = torch.zeros((len(chunk), width), dtype=torch.float32)
        adv = torch.zeros((len(chunk), width), dtype=torch.float32)
        wgt = torch.zeros((len(chunk), width), dtype=torch.float32)
        sid = torch.zeros((len(chunk), width), dtype=torch.long)
        rec = torch.zeros((len(chunk), width), dtype=torch.bool)
        for b, r in enumerate(chunk):
            n = len(r.tokens)
            ids[b, :n] = torch.tensor(r.tokens)
            attn[b, :n] = 1
            mask[b, :n] = torch.tensor(r.mask, dtype=torch.bool)
            old[b, :n] = torch.tensor(r.old_logprobs)
            adv[b, :n] = r.advantage
            wgt[b, :n] = r.weight
            sid[b, :n] = b
            rec[b, :n] = r.recomputed
        sel = mask[:, 1:]
        out.append(
            MicroBatch(
                input_ids=ids.to(device),
                attention_mask=attn.to(device),
                mask=mask.to(device),
                old_lp=old[:, 1:][sel].to(device),
                advantage=adv[:, 1:][sel].to(device),
                weight=wgt[:, 1:][sel].to(device),
                seq_index=sid[:, 1:][sel].to(device),
                recomputed=rec[:, 1:][sel].to(device),
                num_seqs=len(chunk),
                has_recomputed=any(r.recomputed for r in chunk),
                num_tokens=int(sel.sum()),
                row_ids=list(ids_in_chunk),
                row_tokens=[int(n) for n in sel.sum(dim=1)],
            )
        )
    return out
