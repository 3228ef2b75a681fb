"""Pydantic mirror of contracts/tinker-engine.ts (POST /tinker/*: the engine's Tinker primitives).

Field names, defaults and bounds are copied from the zod schemas; tests/test_tinker_contract.py compares these
models' JSON Schema with zod's field by field (tests/zod_contract.py), so a drift shows up as a failing test.
As in train.py: zod's `.strict()` objects are `extra="forbid"`, plain zod objects strip unknown keys
(`extra="ignore"`), and models are `strict` so `"1"` or `true` is never coerced into a number.
Floats refuse NaN/Infinity (zod's z.number() does, and Python's JSON reader would otherwise accept `NaN`): one
NaN weight or advantage would poison the whole accumulated gradient.

Checks between fields (one entry per position, the loss's inputs present, token ids inside the vocabulary)
need the model or the loss and are the engine's (tinker/checks.py), naming the field as `data[i].<name>`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from .train import CheckpointInfo

_STRICT = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)
_LOOSE = ConfigDict(strict=True, extra="ignore", allow_inf_nan=False)

RunId = Annotated[str, Field(min_length=1, max_length=200)]
TokenId = Annotated[int, Field(ge=0)]

TinkerLoss = Literal["cross_entropy", "importance_sampling", "ppo", "cispo"]
TINKER_LOSSES: tuple[str, ...] = ("cross_entropy", "importance_sampling", "ppo", "cispo")


class TrainingTarget(BaseModel):
    """The run's adapter, named on every training call (created on the first, checked on the rest)."""

    model_config = _LOOSE

    run_id: RunId
    base_model: str = Field(min_length=1, max_length=400)
    lora_rank: int = Field(ge=1, le=256)
    seed: int = Field(ge=0)


class TinkerDatum(BaseModel):
    model_config = _LOOSE

    tokens: list[TokenId] = Field(min_length=1)  # the model input
    target_tokens: list[TokenId]  # one per input position: what that position is trained to predict
    weights: list[float] | None = None  # cross_entropy: per-position weight (0 masks a position)
    logprobs: list[float] | None = None  # RL losses: the sampler's logprob of each target token
    advantages: list[float] | None = None  # RL losses: per-position advantage (0 masks a position)


class LossFnConfig(BaseModel):
    model_config = _STRICT

    clip_low_threshold: float | None = Field(None, gt=0)
    clip_high_threshold: float | None = Field(None, gt=0)


class TinkerForwardBackwardRequest(TrainingTarget):
    forward_only: bool  # true: Tinker's forward (no gradient kept)
    loss_fn: TinkerLoss
    loss_fn_config: LossFnConfig | None = None
    data: list[TinkerDatum] = Field(min_length=1)


class LossFnOutput(BaseModel):
    model_config = _LOOSE

    logprobs: list[float]
    elementwise_loss: list[float]


class TinkerForwardBackwardResponse(BaseModel):
    model_config = _LOOSE

    loss_fn_outputs: list[LossFnOutput]
    metrics: dict[str, float]  # "loss:sum" (Tinker's name) and the trainer's own measures
    pending_batches: int  # forward_backward calls whose gradients wait for the next optim_step


class TinkerAdamParams(BaseModel):
    model_config = _LOOSE

    learning_rate: float = Field(gt=0, le=1)
    beta1: float = Field(ge=0, lt=1)
    beta2: float = Field(ge=0, lt=1)
    eps: float = Field(gt=0)
    weight_decay: float = Field(ge=0)
    grad_clip_norm: float = Field(ge=0)  # 0: no clipping (Tinker's default)


class TinkerOptimStepRequest(TrainingTarget):
    adam_params: TinkerAdamParams


class OptimStepMetrics(BaseModel):
    model_config = _LOOSE

    grad_norm: float
    learning_rate: float
    loss: float  # Σ of the accumulated batches' loss:sum
    trained_tokens: int
    batches: int
    duration_s: float


class TinkerOptimStepResponse(BaseModel):
    model_config = _LOOSE

    step: int  # optimizer steps the run has applied, this one included (its next checkpoint's step)
    metrics: OptimStepMetrics


class TinkerSaveRequest(TrainingTarget):
    kind: Literal["sampler", "state"]  # both write adapter and optimizer (one checkpoint format)


class TinkerSaveResponse(BaseModel):
    model_config = _LOOSE

    step: int
    # None at step 0: nothing trained yet, the adapter is the base model exactly (LoRA B = 0).
    checkpoint: CheckpointInfo | None  # /train's: step, path, size_bytes


class TinkerLoadRequest(TrainingTarget):
    source_run_id: RunId
    step: int = Field(ge=1)
    with_optimizer: bool


class TinkerLoadResponse(BaseModel):
    model_config = _LOOSE

    step: int  # the run's step after the load (the source's)


class TinkerSampleRequest(BaseModel):
    model_config = _LOOSE

    model: str = Field(min_length=1, max_length=400)  # the base model or "<run>@<step>"
    prompt_token_ids: list[TokenId] = Field(min_length=1)
    num_samples: int = Field(ge=1, le=64)
    max_tokens: int = Field(ge=1)
    temperature: float = Field(ge=0, le=100)
    top_p: float = Field(gt=0, le=1)
    top_k: int  # -1: off, the only value served (the backends sample without top-k)
    seed: int | None = None
    stop: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    stop_token_ids: list[TokenId] = Field(default_factory=list)
    prompt_logprobs: bool = False  # also each prompt token's logprob (the first is null)
    user: str | None = None  # the engine's fair-share key (the run or caller)


class SampledSequence(BaseModel):
    model_config = _LOOSE

    tokens: list[TokenId]
    logprobs: list[float]
    stop_reason: Literal["stop", "length"]
    text: str  # the tokens decoded (special tokens skipped), for the run page


class TinkerSampleResponse(BaseModel):
    model_config = _LOOSE

    sequences: list[SampledSequence]
    prompt_text: str  # the prompt decoded (special tokens kept), for the run page
    prompt_logprobs: list[float | None] | None
