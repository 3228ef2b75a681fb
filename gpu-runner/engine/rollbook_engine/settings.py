"""Every setting the engine reads from its environment, read once, in one place.

pydantic-settings is not among the engine's dependencies, so this is a plain pydantic model filled from the
environment by `from_env`: typed and validated at start, a bad value named by its variable. `engine_settings()`
is the process's one reading (cached); code that needs other values (tests) passes an `EngineSettings` of its
own or calls `from_env` with a dict. An empty variable counts as unset. The switches keep the spelling they
always had: ROLLBOOK_EXIT_WITH_PARENT is on only as "1", ROLLBOOK_PACKED_WEIGHTS / ROLLBOOK_JOIN_INFLIGHT are
off only as "0", and ROLLBOOK_LEAN_DECODE forces the lean forward off / on as "0" / "1" (anything else: auto).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

# gpu-runner/engine/rollbook_engine/ → the repository: the one root every path setting is read from, as the
# runner and web server read theirs (contracts/repo-path.ts). The engine runs in gpu-runner/engine, so a
# `.env` copied from `.env.example` (ROLLBOOK_RUNS_DIR=runs) named gpu-runner/engine/runs from the cwd.
REPO_ROOT = Path(__file__).resolve().parents[3]


def repo_path(value: str | Path) -> Path:
    """A path setting's value as an absolute path: `~/x` from the home folder, a relative one from the repo."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else REPO_ROOT / path


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
    vllm_max_lora_rank: int | None = Field(
        default=None, ge=1,
        description="ROLLBOOK_VLLM_MAX_LORA_RANK: the largest LoRA rank vLLM can serve (a checkpoint of a larger "
                    "rank is refused with this setting's name). Unset: 64 on CUDA; 8 on CPU (the trainer's default "
                    "lora_rank), where vLLM's LoRA kernels pad every adapter to this rank: at 64 sampling 16 "
                    "streams from a checkpoint ran at 10 tok/s, at 8 at 51 (docs/benchmarks.md).",
    )
    vllm_dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        default="auto",
        description="ROLLBOOK_VLLM_DTYPE: the dtype vLLM computes in. auto: float32 on CPU (bf16 logprobs differed "
                    "from the trainer's fp32 by 0.03-0.05 and from one server run to the next; fp32 matched PEFT to "
                    "3e-5, at about 1.8x the time), bfloat16 on CUDA (the trainer's dtype there).",
    )
    vllm_kv_cache_gib: float | None = Field(
        default=None, gt=0,
        description="ROLLBOOK_VLLM_KV_CACHE_GIB: the memory vLLM's KV cache takes (vLLM's kv_cache_memory_bytes). "
                    "Unset: 2 GiB on CPU (vLLM's own default there is a share of all RAM, 8.7 GiB on a 24 GiB "
                    "machine, and it refuses to start when that much is not free); on CUDA what "
                    "ROLLBOOK_VLLM_GPU_MEMORY leaves after the weights.",
    )

    adapter_memory_mb: int | None = Field(
        default=None, ge=1,
        description="ROLLBOOK_ADAPTER_MEMORY_MB: memory budget for all runs' per-run state on the shared model — "
                    "each training run's LoRA + gradients + AdamW moments and each checkpoint loaded for serving, "
                    "in one ledger. Over it, the least recently used runs are evicted (training state dropped "
                    "when it equals its newest checkpoint, spilled to disk first otherwise) and restored exactly "
                    "on their next step. Unset: as many bytes as the base model's weights.",
    )

    train_memory_gb: float | None = Field(
        default=None, gt=0,
        description="ROLLBOOK_TRAIN_MEMORY_GB: the most memory one training step may add on top of the loaded "
                    "model (activations, logits; trainer/memory.py estimates it from the step's micro-batches). A "
                    "step over it is refused with an error naming this setting instead of being OOM-killed. "
                    "Unset: the memory free when the step starts (CPU: MemAvailable; CUDA: free device memory).",
    )

    # --- process and HTTP ------------------------------------------------------------------------------
    engine_host: str = Field(default="127.0.0.1", description="ROLLBOOK_ENGINE_HOST: --host's default.")
    engine_port: int = Field(default=8100, description="ROLLBOOK_ENGINE_PORT: --port's default.")
    model: str | None = Field(
        default=None, description="ROLLBOOK_MODEL: --model's default; unset: the bundled model (model_loader.DEFAULT_MODEL).",
    )
    exit_with_parent: bool = Field(
        default=False,
        description="ROLLBOOK_EXIT_WITH_PARENT=1: end the engine when the process that started it is gone "
                    "(parent_watch.py; the runner's supervisor sets it).",
    )
    rank: int | None = Field(default=None, description="RANK: this process's rank in a torchrun worker group.")
    local_rank: int | None = Field(
        default=None, description="LOCAL_RANK: the rank on this machine (torchrun sets it), which picks the GPU.",
    )

    # --- model and runs ------------------------------------------------------------------------------
    model_cache: Path | None = Field(
        default=None,
        description="ROLLBOOK_MODEL_CACHE: where the bundled model is converted to once; unset: "
                    "~/.cache/rollbook/models. Relative: from the repository; ~/ is the home folder.",
    )
    runs_dir: Path | None = Field(
        default=None,
        description="ROLLBOOK_RUNS_DIR: the runs' folder (checkpoints, spills); unset: runs/ at the repo root. "
                    "Relative: from the repository, whatever the cwd.",
    )
    max_loaded_adapters: int = Field(
        default=4, description="ROLLBOOK_MAX_LOADED_ADAPTERS: checkpoints kept loaded for serving (LRU).",
    )
    max_context_tokens: int = Field(
        default=0,
        description="ROLLBOOK_MAX_CONTEXT_TOKENS: caps the model's context (prompt + completion); 0: the "
                    "model's own limit.",
    )

    # --- inference -----------------------------------------------------------------------------------
    backend: str = Field(
        default="auto",
        description="ROLLBOOK_BACKEND: auto|transformers|vllm; auto takes vLLM only with CUDA and vllm importable "
                    "(any other value: transformers).",
    )
    max_batch: int = Field(default=32, description="ROLLBOOK_MAX_BATCH: rows one transformers batch samples.")
    gather_ms: float = Field(
        default=5, description="ROLLBOOK_GATHER_MS: how long a new batch waits for more rows to join it.",
    )
    join_inflight: bool = Field(
        default=True,
        description="ROLLBOOK_JOIN_INFLIGHT=0: rows no longer join the running batch between decode steps.",
    )
    yield_to_trainer: bool = Field(
        default=True,
        description="ROLLBOOK_YIELD_TO_TRAINER=0: a running batch no longer steps aside for a training step between "
                    "decode steps (it finishes first, so a long API completion delays the step by all of its tokens).",
    )
    lean_decode: bool | None = Field(
        default=None,
        description="ROLLBOOK_LEAN_DECODE=0|1: the lean Llama forward (backends/decode_llama.py) off / on; "
                    "unset: on on CPU only.",
    )
    batch_invariant: bool = Field(
        default=True,
        description="ROLLBOOK_BATCH_INVARIANT=0: the lean forward may let a row's logits depend on which rows share "
                    "its batch (float rounding: padded attention, a 1-row matmul kernel, the LoRA matmuls' row count). "
                    "On (default): a row's logits are bit-identical whatever shares the batch, so a seed reproduces a "
                    "run on a loaded machine (backends/decode_llama.py).",
    )
    packed_weights: bool = Field(
        default=True,
        description="ROLLBOOK_PACKED_WEIGHTS=0: no oneDNN prepacked copy of the base weights for the lean "
                    "forward on CPU (saves that copy's memory).",
    )

    @field_validator("model_cache", "runs_dir", mode="after")
    @classmethod
    def _from_the_repo(cls, v: Path | None) -> Path | None:
        return None if v is None else repo_path(v)

    @field_validator("exit_with_parent", mode="before")
    @classmethod
    def _on_only_as_1(cls, v: object) -> object:
        return v == "1" if isinstance(v, str) else v

    @field_validator("join_inflight", "yield_to_trainer", "packed_weights", "batch_invariant", mode="before")
    @classmethod
    def _off_only_as_0(cls, v: object) -> object:
        return v != "0" if isinstance(v, str) else v

    @field_validator("lean_decode", mode="before")
    @classmethod
    def _forced_as_0_or_1(cls, v: object) -> object:
        return {"0": False, "1": True}.get(v) if isinstance(v, str) else v

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> EngineSettings:
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
    "vllm_dtype": "ROLLBOOK_VLLM_DTYPE",
    "vllm_kv_cache_gib": "ROLLBOOK_VLLM_KV_CACHE_GIB",
    "adapter_memory_mb": "ROLLBOOK_ADAPTER_MEMORY_MB",
    "train_memory_gb": "ROLLBOOK_TRAIN_MEMORY_GB",
    "engine_host": "ROLLBOOK_ENGINE_HOST",
    "engine_port": "ROLLBOOK_ENGINE_PORT",
    "model": "ROLLBOOK_MODEL",
    "exit_with_parent": "ROLLBOOK_EXIT_WITH_PARENT",
    "rank": "RANK",
    "local_rank": "LOCAL_RANK",
    "model_cache": "ROLLBOOK_MODEL_CACHE",
    "runs_dir": "ROLLBOOK_RUNS_DIR",
    "max_loaded_adapters": "ROLLBOOK_MAX_LOADED_ADAPTERS",
    "max_context_tokens": "ROLLBOOK_MAX_CONTEXT_TOKENS",
    "backend": "ROLLBOOK_BACKEND",
    "max_batch": "ROLLBOOK_MAX_BATCH",
    "gather_ms": "ROLLBOOK_GATHER_MS",
    "join_inflight": "ROLLBOOK_JOIN_INFLIGHT",
    "yield_to_trainer": "ROLLBOOK_YIELD_TO_TRAINER",
    "lean_decode": "ROLLBOOK_LEAN_DECODE",
    "packed_weights": "ROLLBOOK_PACKED_WEIGHTS",
    "batch_invariant": "ROLLBOOK_BATCH_INVARIANT",
}


@functools.cache
def engine_settings() -> EngineSettings:
    """The settings of this process, read from its environment on first use. Nothing changes the engine's
    variables once it runs, so one reading serves every module (a worker thread included)."""
    return EngineSettings.from_env()
