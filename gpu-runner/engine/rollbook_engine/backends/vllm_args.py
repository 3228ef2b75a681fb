"""The keyword arguments of vLLM's AsyncEngineArgs, built from the engine's settings without importing vllm.

Kept apart from vllm_backend.py (which imports vllm at the top) so the settings → engine-args mapping is
tested on machines without vLLM or a GPU.
"""

from __future__ import annotations

from typing import Any

from ..settings import EngineSettings


def vllm_engine_args(model_path: str, max_model_len: int, max_loras: int, settings: EngineSettings) -> dict[str, Any]:
    return dict(
        model=model_path,
        dtype="bfloat16",
        max_model_len=max_model_len,
        # ROLLBOOK_VLLM_TENSOR_PARALLEL: vLLM splits every layer over this many GPUs of this machine (its own
        # worker processes, one per GPU); 1 keeps the whole model on the engine's GPU.
        tensor_parallel_size=settings.vllm_tensor_parallel,
        # The trainer's copy of the model lives on the same GPU(s): leave it room.
        gpu_memory_utilization=settings.vllm_gpu_memory,
        enable_lora=True,
        max_lora_rank=settings.vllm_max_lora_rank,
        max_loras=max_loras,
        # Sleep (weights offloaded, KV cache freed) while the trainer holds the store's exclusive lock.
        enable_sleep_mode=True,
    )
