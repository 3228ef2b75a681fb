"""Data parallelism for one training step across the ranks of a torch.distributed job (torchrun).

Every rank builds the SAME global batch from the same request (rows, weights and micro-batches are
deterministic), takes micro-batches i with i % world == rank, and backpropagates only those. The loss
weights (loss.py) are normalised over the whole step's batch, so the step's gradient is the SUM of the
micro-batch gradients: the ranks all-reduce their LoRA gradients with SUM (not the mean DDP takes), after
which every rank holds exactly the single-process gradient, clips it the same way and takes the same AdamW
step. Ranks therefore never drift apart, and only rank 0 writes the checkpoint.

Why an all-reduce of the LoRA gradients and not `DistributedDataParallel` around the model:
- DDP registers its hooks on the parameters that require grad when it is constructed. The engine's model is
  one shared PeftModel whose trainable set changes every step (each run adds its own `train:<run>` adapter
  and inference loads `ckpt:` adapters beside it), so DDP would have to be rebuilt per step.
- The trainer calls the decoder and lm_head directly (trainer._selected_logits) instead of the model's
  forward, which DDP needs to go through to prepare its reducer.
- DDP averages gradients over ranks; our loss is a global weighted sum, so it would need rescaling by the
  world size, and it reduces on every backward (one per micro-batch) unless wrapped in no_sync().
- A rank can have no micro-batch at all (fewer micro-batches than ranks); it must still take part in the
  reduce, with zero gradients, which DDP does not model.
One flat all-reduce per optimiser step after accumulation moves the same bytes DDP would, once.

Outside a torch.distributed job (or with one rank) `data_parallel()` is the identity, so the single-process
trainer runs unchanged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist

T = TypeVar("T")

# Objects (requests, metrics) travel on a gloo group even when gradients use NCCL: gloo moves Python objects
# through CPU memory, needs no CUDA stream, and gets its own timeout (see control_group()).
_control_group: Any = None


def set_control_group(group) -> None:
    global _control_group
    _control_group = group


def control_group():
    return _control_group


# Set by fsdp.shard_base_model: sharded layers' forwards are collectives, so ranks move in lockstep.
_lockstep = False


def set_lockstep(on: bool) -> None:
    global _lockstep
    _lockstep = on


@dataclass(frozen=True)
class DataParallel:
    rank: int = 0
    world: int = 1
    # FSDP: every rank must run as many forwards/backwards as the busiest one (see share()).
    lockstep: bool = False

    @property
    def writes_checkpoints(self) -> bool:
        return self.rank == 0

    def share(self, items: Sequence[T]) -> list[tuple[int | None, T]]:
        """This rank's (global index, item) pairs: round-robin, so the longest-first micro-batches spread evenly.
        In lockstep, a rank with one fewer gets (None, a repeat of an item) to run with zero weight."""
        mine: list[tuple[int | None, T]] = [(i, x) for i, x in enumerate(items) if i % self.world == self.rank]
        if self.lockstep and items:
            rounds = -(-len(items) // self.world)
            mine += [(None, items[self.rank % len(items)])] * (rounds - len(mine))
        return mine

    def sum_grads(self, params: Sequence[torch.nn.Parameter]) -> None:
        """Replace each parameter's gradient by its sum over ranks (a missing gradient counts as zero)."""
        if self.world == 1 or not params:
            return
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        offset = 0
        for p in params:
            n = p.numel()
            p.grad = flat[offset : offset + n].view_as(p).clone()
            offset += n

    def gather(self, obj: T) -> list[T]:
        """Every rank's `obj`, in rank order (all ranks receive the list)."""
        if self.world == 1:
            return [obj]
        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, obj, group=_control_group)
        return out

    def any(self, flag: bool) -> bool:
        """True on every rank when any rank says True: lets all ranks fail a step together, none left waiting."""
        return any(self.gather(bool(flag)))


def data_parallel() -> DataParallel:
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return DataParallel(rank=dist.get_rank(), world=dist.get_world_size(), lockstep=_lockstep)
    return DataParallel()


def micro_batch_seed(base: int, epoch: int, index: int) -> int:
    """Torch seed for one micro-batch's forward/backward (LoRA dropout): depends on the micro-batch, not on
    which rank runs it or what ran before, so a distributed step draws what the single-process step draws."""
    digest = hashlib.sha256(f"rollbook-mb:{base}:{epoch}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1)


def announce(payload: object) -> None:
    """Rank 0 of a worker group: send the next request (None = shut down) to the other ranks."""
    if _control_group is None or not dist.is_initialized() or dist.get_world_size() == 1:
        return
    if dist.get_rank() == 0:
        dist.broadcast_object_list([payload], src=0, group=_control_group)


def receive() -> Any:
    """Ranks > 0 of a worker group: wait for rank 0's next request (what `announce` sent: a TrainRequest, or None)."""
    box: list[object] = [None]
    dist.broadcast_object_list(box, src=0, group=_control_group)
    return box[0]
