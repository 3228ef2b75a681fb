"""Tinker's training calls run exactly where /train's steps run (trainer.train_step): one first-come-first-served
queue for every run's steps (tenancy.train_turns), then `store.exclusive()` (no generation batch runs; vLLM
sleeps where it can), then a worker thread holding the model lock (adapter loads and batches hold it too)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import TypeVar

import torch

from ..trainer import tenancy
from ..trainer.memory import large_blocks_mapped, release

T = TypeVar("T")

# The call keeps running after its client disconnects (a thread cannot be interrupted mid-backward, and the run's
# state must stay consistent); held here so the task is not garbage-collected meanwhile.
_running: set[asyncio.Task] = set()


async def exclusive_call(store, fn: Callable[[], T]) -> T:
    """`fn()` in a worker thread, in the train queue and under store.exclusive(); immune to cancellation."""

    async def locked() -> T:
        async with tenancy.train_turns(store).turn(), store.exclusive():
            return await asyncio.to_thread(fn)

    task = asyncio.create_task(locked())
    _running.add(task)
    task.add_done_callback(_running.discard)
    return await asyncio.shield(task)


@contextlib.contextmanager
def model_locked(store) -> Iterator[None]:
    """In the worker thread: the store's model lock (PEFT modules never change under the call), CPU blocks
    mapped as in a trainer step, and memory handed back after (trainer.train_step_sync does the same)."""
    device = torch.device(store.device)
    try:
        with store._model_lock, large_blocks_mapped(device):
            yield
    finally:
        release(device)
