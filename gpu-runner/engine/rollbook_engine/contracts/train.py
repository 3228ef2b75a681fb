"""Pydantic mirror of contracts/train.ts and of `TrainerConfig` in contracts/config.ts.

Field names, defaults and bounds are copied from the zod schemas; tests/test_train_contract.py compares these
models' JSON Schema with zod's field by field, and both sides validate the same fixture
(contracts/fixtures/train_request.json), so a drift shows up as a failing test.
zod's `.strict()` objects become `extra="forbid"` here (an unknown trainer key is a typo, not a feature);
plain zod objects strip unknown keys, which is pydantic's default `extra="ignore"`.
Models are `strict` so `"1"` or `true` is not silently coerced to a number, as zod would also refuse.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

_STRICT = ConfigDict(strict=True, extra="forbid")
_LOOSE = ConfigDict(strict=True, extra="ignore")


class TrainerConfig(BaseModel):
    """One GRPO step's hyper-parameters, grouped as in config.ts. Each field: type, default, why."""

    model_config = _STRICT

    # --- optimiser ---------------------------------------------------------------------------------
    learning_rate: float = Field(
        1e-3, gt=0, le=1,
        description="AdamW learning rate. ART uses 5e-6; 1e-3 measured on the bundled 135M model (docs/benchmarks.md, "
        "'Defaults that learn'): fresh single-turn tasks learn in 15 steps with it, the former 2e-4 barely moved one.",
    )
    adam_beta1: float = Field(0.9, ge=0, lt=1, description="AdamW beta1 (ART's default).")
    adam_beta2: float = Field(
        0.99, ge=0, lt=1, description="AdamW beta2; 0.99 rather than 0.999 so the 2nd moment tracks the few, noisy RL steps."
    )
    weight_decay: float = Field(
        0.1, ge=0, description="Decoupled weight decay over the LoRA parameters only (the base model is frozen)."
    )
    max_grad_norm: float = Field(
        1.0, gt=0, description="Clip the global gradient norm of the adapter; ART uses 0.1 for tiny batches."
    )

    # --- LoRA --------------------------------------------------------------------------------------
    lora_rank: int = Field(8, ge=1, le=256, description="LoRA rank r (ART: 8).")
    lora_alpha: float = Field(16, gt=0, description="LoRA alpha; the update is scaled by alpha / r (ART: 16).")
    lora_dropout: float = Field(0, ge=0, lt=1, description="Dropout on the LoRA input; 0 keeps train and sample logprobs equal.")
    lora_target_modules: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        min_length=1,
        description="Module names that get a LoRA; all attention and MLP projections, as ART does.",
    )

    # --- GRPO loss ---------------------------------------------------------------------------------
    loss: Literal["cispo", "ppo"] = Field(
        "ppo",
        description='"ppo": clipped surrogate -min(r·A, clip(r)·A); "cispo": -clip(r.detach())·A·logπ (ART\'s default).',
    )
    epsilon: float = Field(0.2, ge=0, le=10, description="Lower clip: ratios below 1-epsilon are clipped.")
    epsilon_high: float = Field(0.28, ge=0, le=10, description="Upper clip 1+epsilon_high (DAPO's clip-higher keeps exploration).")
    importance_sampling_level: Literal["token", "sequence"] = Field(
        "token", description='"sequence" is GSPO: one length-normalised ratio exp(mean logratio) per sequence.'
    )
    scale_rewards: bool = Field(True, description="Divide advantages by the group std + 1e-6 (GRPO); false = Dr.GRPO.")
    beta: float = Field(
        0, ge=0, le=10, description="KL (k3) weight against the base model (adapter disabled); 0 skips that extra forward pass."
    )
    mini_epochs: int = Field(1, ge=1, le=16, description="Optimiser passes over the step's batch; 1 = strictly on-policy.")
    micro_batch_size: int = Field(
        8, ge=1, le=256,
        description="Most sequences per forward/backward (micro_batch_tokens may make it fewer); gradients accumulate "
        "across micro-batches.",
    )
    micro_batch_tokens: int = Field(
        4096, ge=16, le=1_048_576,
        description="Most padded tokens (rows × longest row) per forward/backward, so memory stays flat however long "
        "the sequences; a longer sequence trains alone. 4096 holds 8 calculator rollouts (~400 tokens) in one.",
    )
    gradient_checkpointing: bool = Field(
        True,
        description="Recompute each decoder layer in backward instead of keeping its activations (non-reentrant): "
        "activations shrink ~layers-fold for ~one more forward pass. Same update either way.",
    )


class TokenSequence(BaseModel):
    """One contiguous token sequence; mask[i]=1 where token i was sampled (trained), logprobs[i] its sampling logprob."""

    model_config = _LOOSE

    tokens: list[Annotated[int, Field(ge=0)]] = Field(min_length=1)
    mask: list[Literal[0, 1]]
    logprobs: list[float]
    # True: sampling logprobs unknown (a reply sampled elsewhere, re-tokenised); `logprobs` all 0 and the trainer
    # uses the current policy's, detached (ratio 1). None = false. trainer/batch.py checks the zeros, naming the index.
    recomputed_logprobs: bool | None = None
    # 1 where a sampled token was tool-format scaffolding (token_roles.py), for the token view: not trained on
    # differently, so the trainer never reads it. None: unknown.
    scaffolding: list[Literal[0, 1]] | None = None

    @model_validator(mode="after")
    def _same_length(self) -> TokenSequence:
        if len(self.mask) != len(self.tokens) or len(self.logprobs) != len(self.tokens):
            raise ValueError("tokens, mask and logprobs must have the same length")
        if self.scaffolding is not None and len(self.scaffolding) != len(self.tokens):
            raise ValueError("scaffolding must have one entry per token")
        return self


class TrainSample(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", allow_inf_nan=False)

    trajectory_id: str
    reward: float  # finite: a NaN reward would poison the whole group's advantages
    sequences: list[TokenSequence] = Field(min_length=1)


class TrainGroup(BaseModel):
    model_config = _LOOSE

    samples: list[TrainSample] = Field(min_length=1)


class InitFrom(BaseModel):
    """Start a new run's adapter from another run's checkpoint (a fork). Mirrors InitFrom in train.ts."""

    model_config = _LOOSE

    run_id: str = Field(min_length=1)
    step: int = Field(ge=1)
    # A fork is a new run: by default only the adapter weights carry over and AdamW starts fresh.
    load_optimizer: bool = False


class TrainRequest(BaseModel):
    model_config = _LOOSE

    run_id: str = Field(min_length=1)
    # The step being trained; saved as checkpoints/<step:04d>. Must be newest checkpoint + 1.
    step: int = Field(ge=1)
    base_model: str = Field(min_length=1)
    seed: int = 0
    config: TrainerConfig
    groups: list[TrainGroup]
    # Only read while the run has no checkpoint of its own (step 1): where its adapter starts from.
    init_from: InitFrom | None = None


class TrainMetrics(BaseModel):
    model_config = _LOOSE

    loss: float
    grad_norm: float
    kl: float
    clip_fraction: float
    entropy: float
    probs_corr: float
    trained_tokens: int
    groups_submitted: int
    groups_trainable: int
    # true when no group had reward variance: no optimiser update (the checkpoint still advances).
    skipped: bool
    duration_s: float
    # Of duration_s, the seconds spent writing the checkpoint (the charts' step time split).
    checkpoint_s: float | None = None


class CheckpointInfo(BaseModel):
    model_config = _LOOSE

    step: int
    path: str
    size_bytes: int


class ProgressLine(BaseModel):
    type: Literal["progress"] = "progress"
    micro_batch: int
    micro_batches: int
    # This micro-batch's own loss (its weighted sum over its weight): progress, not the step's loss, which is
    # TrainMetrics.loss (the page shows that one; contracts/signals.ts).
    loss: float


class TrainedTokens(BaseModel):
    """What the step trained on one sample: its advantage and, per sequence of the sample (in request order),
    the trainer's logprob of each token with mask=1 in order, from the first forward pass (the policy before
    the update, the logprobs the importance ratio and probs_corr use). A sequence with no masked token: []."""

    model_config = _LOOSE

    advantage: float
    sequences: list[list[float]]


class ResultLine(BaseModel):
    type: Literal["result"] = "result"
    metrics: TrainMetrics
    checkpoint: CheckpointInfo
    # Keyed by trajectory_id, only samples that trained (a zero-variance group's samples are absent).
    token_logprobs: dict[str, TrainedTokens] = Field(default_factory=dict)


class ErrorLine(BaseModel):
    type: Literal["error"] = "error"
    message: str


TrainStreamLine = Annotated[ProgressLine | ResultLine | ErrorLine, Field(discriminator="type")]
