"""The keyword arguments of vLLM's AsyncEngineArgs, built from the engine's settings, and of SamplingParams
for a forced tool call's grammar, without importing vllm.

Kept apart from vllm_backend.py (which imports vllm at the top) so the settings → engine-args mapping is
tested on machines without vLLM or a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..settings import EngineSettings


# On CPU vLLM's KV cache is sized from ALL of the machine's RAM unless told (8.7 GiB on a 24 GiB box), and it
# refuses to start when that is not free; 2 GiB hold 64 sequences of 4,096 tokens of a 135M model.
CPU_KV_CACHE_GIB = 2.0
# vLLM's CPU LoRA kernels pad every adapter to max_lora_rank: 64 made sampling from a checkpoint 5x slower than 8
# (the trainer's default lora_rank). On CUDA the padding costs little and 64 admits larger ranks.
CPU_MAX_LORA_RANK = 8
CUDA_MAX_LORA_RANK = 64


def max_lora_rank(settings: EngineSettings, device: str) -> int:
    """The largest LoRA rank vLLM serves: ROLLBOOK_VLLM_MAX_LORA_RANK, else the platform's default."""
    return settings.vllm_max_lora_rank or (CUDA_MAX_LORA_RANK if device == "cuda" else CPU_MAX_LORA_RANK)


def vllm_engine_args(model_path: str, max_model_len: int, max_loras: int, settings: EngineSettings, *,
                     device: str, sleep_mode: bool) -> dict[str, Any]:
    """`device`: "cuda" or "cpu" (vLLM's platform); `sleep_mode`: whether that platform can sleep
    (vLLM's current_platform.is_sleep_mode_available(): CUDA yes, CPU "Sleep mode is not supported")."""
    dtype = settings.vllm_dtype
    if dtype == "auto":
        dtype = "bfloat16" if device == "cuda" else "float32"
    kv_gib = settings.vllm_kv_cache_gib or (None if device == "cuda" else CPU_KV_CACHE_GIB)
    return dict(
        model=model_path,
        dtype=dtype,
        max_model_len=max_model_len,
        # ROLLBOOK_VLLM_TENSOR_PARALLEL: vLLM splits every layer over this many GPUs of this machine (its own
        # worker processes, one per GPU); 1 keeps the whole model on the engine's GPU.
        tensor_parallel_size=settings.vllm_tensor_parallel,
        # The trainer's copy of the model lives on the same GPU(s): leave it room.
        gpu_memory_utilization=settings.vllm_gpu_memory,
        **({"kv_cache_memory_bytes": int(kv_gib * 1024**3)} if kv_gib else {}),
        enable_lora=True,
        max_lora_rank=max_lora_rank(settings, device),
        max_loras=max_loras,
        # Sleep (weights offloaded, KV cache freed) while the trainer holds the store's exclusive lock, where the
        # platform can; elsewhere vLLM keeps its memory while the trainer runs (the lock still holds requests).
        enable_sleep_mode=sleep_mode,
        # The product's forced-call grammars are llguidance's Lark (`%json{…}` with the schema's x-guidance
        # separators). Under vLLM's "auto" a Lark grammar goes to xgrammar, which parses `%json` but ignores the
        # separators: a call came out as `{\n    "city": …}` instead of the template's `{"city": …}`.
        structured_outputs_config={"backend": "guidance"},
    )


def guided_decoding_kwargs(grammar: str | None, structured_outputs: Callable[..., Any] | None,
                           guided_decoding: Callable[..., Any] | None) -> dict[str, Any]:
    """SamplingParams keywords that make vLLM follow a forced call's grammar (GenerationRequest.grammar, Lark
    in llguidance's dialect, `%json{...}` for the arguments), or {} without one.

    `structured_outputs`: vLLM's StructuredOutputsParams class (vLLM >= 0.10.2, `SamplingParams(
    structured_outputs=...)`), else None; `guided_decoding`: GuidedDecodingParams (older vLLM,
    `SamplingParams(guided_decoding=...)`). The backend is not named per request (vLLM V1 refuses a request
    backend other than the engine's): under the default "auto", a grammar xgrammar cannot read (the `%json`
    extension) goes to vLLM's "guidance" backend, which is llguidance and takes this Lark text as it is."""
    if grammar is None:
        return {}
    if structured_outputs is not None:
        return {"structured_outputs": structured_outputs(grammar=grammar)}
    if guided_decoding is not None:
        return {"guided_decoding": guided_decoding(grammar=grammar)}
    raise RuntimeError("this vLLM has neither StructuredOutputsParams nor GuidedDecodingParams: a forced tool call "
                       "(tool_choice) cannot be constrained; upgrade vLLM or use ROLLBOOK_BACKEND=transformers")
