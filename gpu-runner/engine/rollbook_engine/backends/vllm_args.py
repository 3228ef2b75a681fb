"""The keyword arguments of vLLM's AsyncEngineArgs, built from the engine's settings, and of SamplingParams
for a forced tool call's grammar, without importing vllm.

Kept apart from vllm_backend.py (which imports vllm at the top) so the settings → engine-args mapping is
tested on machines without vLLM or a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
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
