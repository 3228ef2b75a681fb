"""Settings of the engine's HTTP layer, read once from the environment.

pydantic-settings is not among the engine's dependencies (and cannot be added to the shared venv), so this
is a plain pydantic model filled from `ROLLBOOK_*` variables: one place, typed and validated at start.
(Older knobs — ROLLBOOK_MAX_BATCH, ROLLBOOK_GATHER_MS… — are still read where they are used.)
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, Field, ValidationError


class EngineSettings(BaseModel):
    max_request_bytes: int = Field(
        default=16 * 1024 * 1024, ge=1024,
        description="ROLLBOOK_MAX_REQUEST_BYTES: larger request bodies get 413 before they are read whole; "
                    "a body that size can only be a prompt far beyond any context anyway.",
    )

    engine_token: str | None = Field(
        default=None, min_length=16,
        description="ENGINE_TOKEN: every route but /health needs `Authorization: Bearer <ENGINE_TOKEN>` (401 "
                    "otherwise). The runner makes a random one for each engine it spawns. Unset: the engine "
                    "is open to anyone who can reach its port (it warns at start).",
    )

    train_parallel: Literal["ddp", "fsdp"] = Field(
        default="ddp",
        description="ROLLBOOK_TRAIN_PARALLEL: how the ranks of a torchrun worker group "
                    "(trainer/distributed_worker.py) share a step. ddp: every rank holds the whole model and "
                    "trains its share of the micro-batches. fsdp: the base model's decoder layers are sharded "
                    "over the ranks (torch FSDP2 fully_shard) for a model one device cannot hold; inference then "
                    "needs the vLLM backend, since rank 0 alone cannot run the sharded layers.",
    )

    vllm_tensor_parallel: int = Field(
        default=1, ge=1,
        description="ROLLBOOK_VLLM_TENSOR_PARALLEL: vLLM's tensor_parallel_size, the number of GPUs one vLLM "
                    "engine splits the model over (must divide the model's attention heads).",
    )
    vllm_gpu_memory: float = Field(
        default=0.5, gt=0, le=1,
        description="ROLLBOOK_VLLM_GPU_MEMORY: vLLM's gpu_memory_utilization, the share of each GPU vLLM "
                    "takes (weights + KV cache); the trainer's copy of the model needs the rest.",
    )
    vllm_max_lora_rank: int = Field(
        default=64, ge=1,
        description="ROLLBOOK_VLLM_MAX_LORA_RANK: the largest LoRA rank vLLM can serve.",
    )

    adapter_memory_mb: int | None = Field(
        default=None, ge=1,
        description="ROLLBOOK_ADAPTER_MEMORY_MB: memory budget for all runs' per-run state on the shared model — "
                    "each training run's LoRA + gradients + AdamW moments and each checkpoint loaded for serving, "
                    "in one ledger. Over it, the least recently used runs are evicted (training state dropped "
                    "when it equals its newest checkpoint, spilled to disk first otherwise) and restored exactly "
                    "on their next step. Unset: as many bytes as the base model's weights.",
    )

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> "EngineSettings":
        """Settings from ROLLBOOK_* variables; a bad value raises ValueError naming the variable."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for field, var in _ENV_NAMES.items():
            raw = env.get(var)
            if raw:
                values[field] = raw
        try:
            return cls(**values)
        except ValidationError as e:
            err = e.errors(include_url=False)[0]
            var = _ENV_NAMES.get(str(err["loc"][0]), str(err["loc"][0]))
            raise ValueError(f"{var}={env.get(var)!r}: {err['msg']}") from None


# field -> environment variable; pydantic converts the strings ("8", "0.9") to the field's type.
_ENV_NAMES = {
    "max_request_bytes": "ROLLBOOK_MAX_REQUEST_BYTES",
    "engine_token": "ENGINE_TOKEN",
    "train_parallel": "ROLLBOOK_TRAIN_PARALLEL",
    "vllm_tensor_parallel": "ROLLBOOK_VLLM_TENSOR_PARALLEL",
    "vllm_gpu_memory": "ROLLBOOK_VLLM_GPU_MEMORY",
    "vllm_max_lora_rank": "ROLLBOOK_VLLM_MAX_LORA_RANK",
    "adapter_memory_mb": "ROLLBOOK_ADAPTER_MEMORY_MB",
}
