"""The training step's memory: activation checkpointing on the decoder layers, an estimate of what a step adds
(checked against a budget before it runs), and memory handed back to the system after it.

Measured with bench/train_memory.py and bench/profile_train_memory.py (docs/benchmarks.md, "Trainer: peak
memory of one step"): without checkpointing the saved activations of every decoder layer dominate (the
untrained prompt included, once per rollout): ~10 GB for the calculator template's 16 rollouts of ~400 tokens
on a 135M model. With it only each layer's input is kept, plus one layer's activations while the backward
pass recomputes it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from ..settings import engine_settings
from .batch import BadRequest, MicroBatch

GB = 1024**3


@contextlib.contextmanager
def checkpointing(model, on: bool) -> Iterator[None]:
    """Per-decoder-layer activation checkpointing on the base model for the step, off again after (the model
    is shared with inference, which never needs it). Non-reentrant: no need for inputs that require grad,
    and the recompute restores the RNG state, so LoRA dropout draws the same mask twice."""
    inner = model.get_base_model()
    if not on or not getattr(inner, "supports_gradient_checkpointing", False):
        yield
        return
    # transformers 5.2x's names; the vLLM venv's 5.19 (vLLM pins it lower) has the older gradient_* spelling.
    if hasattr(inner, "activation_checkpointing_enable"):
        inner.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        disable = inner.activation_checkpointing_disable
    else:
        inner.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        disable = inner.gradient_checkpointing_disable
    try:
        yield
    finally:
        disable()


# glibc's mallopt parameter and the values used around a step (malloc.h: M_MMAP_THRESHOLD = -3; 32 MiB is
# DEFAULT_MMAP_THRESHOLD_MAX on 64-bit, where glibc's own sliding threshold ends up once large blocks are freed).
_M_MMAP_THRESHOLD = -3
_STEP_MMAP_THRESHOLD = 4 << 20  # see large_blocks_mapped
_IDLE_MMAP_THRESHOLD = 32 << 20


@contextlib.contextmanager
def large_blocks_mapped(device: torch.device) -> Iterator[None]:
    """During a CPU step, every allocation of 4 MiB or more gets its own mapping, unmapped when freed. glibc
    otherwise raises its mmap threshold to 32 MiB as soon as a large block is freed, so the step's activations
    (a few MiB to ~20 MiB each) are carved from the heap and fragment it: the calculator step peaked at 5.2 GB,
    4.2 GB of it freed blocks that the heap kept. Measured (bench/train_memory.py, medians of 3 — 16 MiB one run —, load ~1.8;
    docs/benchmarks.md "Trainer: peak memory"), peak / step time: glibc's default 5.21 GB / 48 s; 16 MiB 3.8 GB /
    50 s; 4 MiB 1.80 GB / 57 s; 1 MiB 1.45 GB / 67 s — a mapping is zeroed page by page when first touched, so
    each smaller threshold trades time for memory; 4 MiB is the first under the 3 GB target. Why mallopt and
    not MALLOC_MMAP_THRESHOLD_ in the engine's environment: that would hold for decode too. Not on CUDA (the
    caching allocator holds GPU memory) nor off glibc."""
    libc = _glibc() if device.type == "cpu" else None
    if libc is None:
        yield
        return
    libc.mallopt(_M_MMAP_THRESHOLD, _STEP_MMAP_THRESHOLD)
    try:
        yield
    finally:
        libc.mallopt(_M_MMAP_THRESHOLD, _IDLE_MMAP_THRESHOLD)


@functools.cache
def _glibc():
    """glibc through ctypes, loaded once (release() and every CPU step ask), or None off glibc."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "gnu_get_libc_version") else None
    except OSError:
        return None


def release(device: torch.device) -> None:
    """Hand the step's freed memory back: Python cycles, the CUDA caching allocator's free blocks, and glibc's
    free heap pages. Without malloc_trim glibc keeps the freed activations mapped (the engine's RSS stayed at
    its step peak between steps, measured), and the next rollouts' decode competes with that for RAM."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    if (libc := _glibc()) is not None:
        libc.malloc_trim(0)


# ---------------------------------------------------------------------------------------------------------
# The estimate.


@dataclass(frozen=True)
class Shape:
    """What the estimate needs from the model's config."""

    layers: int
    hidden: int
    intermediate: int
    vocab: int

    @staticmethod
    def of(model) -> Shape:
        cfg = model.get_base_model().config
        cfg = getattr(cfg, "text_config", None) or cfg
        hidden = int(cfg.hidden_size)
        return Shape(int(cfg.num_hidden_layers), hidden, int(getattr(cfg, "intermediate_size", 4 * hidden)),
                     int(cfg.vocab_size))


# Saved activations per token per decoder layer, in units of one hidden vector plus one MLP-wide vector:
# attention (norm, q/k/v/o inputs and outputs, LoRA's rank-r intermediates, SDPA's output) ~ 12 hidden-wide
# tensors, the gated MLP (gate, up, activation, product, down's input) ~ 5 intermediate-wide ones. Fitted
# to the profile of SmolLM2-135M (docs/benchmarks.md) with headroom, so the estimate errs high.
_HIDDEN_PER_LAYER = 14
_MLP_PER_LAYER = 6
# Logits of the trained positions in float32: the projection, log_softmax, and their gradients.
_LOGIT_COPIES = 4


def step_bytes(shape: Shape, mb: MicroBatch, checkpointing: bool, dtype: torch.dtype) -> int:
    """Memory the forward/backward of one micro-batch holds at its peak, from its shapes."""
    tokens = int(mb.input_ids.numel())  # padded: the model runs on the padding too
    item = torch.finfo(dtype).bits // 8
    per_layer = tokens * (_HIDDEN_PER_LAYER * shape.hidden + _MLP_PER_LAYER * shape.intermediate) * item
    # With checkpointing each layer's input is kept, and one layer at a time is recomputed whole during backward
    # (twice the one layer: its recomputed activations and their gradients).
    ckpt = shape.layers * tokens * shape.hidden * item + 2 * per_layer
    acts = ckpt if checkpointing else shape.layers * per_layer
    logits = _LOGIT_COPIES * mb.num_tokens * shape.vocab * 4
    return acts + logits


def budget_bytes(device: torch.device) -> tuple[int, str]:
    """(bytes a step may add, where that figure comes from): ROLLBOOK_TRAIN_MEMORY_GB when set, otherwise what
    the device has free right now (CUDA: free + the caching allocator's unused blocks; CPU: MemAvailable)."""
    setting = engine_settings().train_memory_gb
    if setting is not None:
        return int(setting * GB), f"ROLLBOOK_TRAIN_MEMORY_GB={setting:g}"
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        free += torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return free, "the GPU's free memory (set ROLLBOOK_TRAIN_MEMORY_GB to fix a budget)"
    available = _mem_available()
    if available is None:
        return sys.maxsize, "no limit (MemAvailable unreadable; set ROLLBOOK_TRAIN_MEMORY_GB)"
    return available, "the machine's available memory (set ROLLBOOK_TRAIN_MEMORY_GB to fix a budget)"


def _mem_available() -> int | None:
    with contextlib.suppress(OSError, ValueError, StopIteration):
        with open("/proc/meminfo") as f:
            line = next(ln for ln in f if ln.startswith("MemAvailable:"))
        return int(line.split()[1]) * 1024
    return None


def check_fits(model, mbs: list[MicroBatch], checkpointing: bool, dtype: torch.dtype, device: torch.device) -> None:
    """Refuse (BadRequest, HTTP 413) a step whose largest micro-batch the budget cannot hold, naming the
    setting, instead of starting it and being killed by the OOM killer halfway."""
    if not mbs:
        return
    shape = Shape.of(model)
    worst = max(mbs, key=lambda mb: step_bytes(shape, mb, checkpointing, dtype))
    need = step_bytes(shape, worst, checkpointing, dtype)
    budget, source = budget_bytes(device)
    if need <= budget:
        return
    rows, width = worst.input_ids.shape
    hint = "lower config.micro_batch_tokens" + ("" if checkpointing else ", turn config.gradient_checkpointing on")
    raise BadRequest(
        "config.micro_batch_tokens",
        f"this step needs about {need / GB:.1f} GB for its largest micro-batch ({rows} sequences × {width} tokens) "
        f"but the training memory budget is {budget / GB:.1f} GB ({source}): {hint}, shorten the sequences, or "
        "raise ROLLBOOK_TRAIN_MEMORY_GB where the machine has the memory",
        413,
    )

