"""Mirror of gpu-runner/contracts/chat.ts: the engine's OpenAI-compatible chat API.

Field names, optionality, defaults and bounds follow the zod schemas one to one. Unknown keys are ignored,
as zod's default object does. Note for serialising: zod's `.optional()` rejects null, so dump responses
with `exclude_none=True` (server.py does). Token-level extensions follow vLLM's `return_token_ids`: top-level
`prompt_token_ids` and per-choice `token_ids`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    # strict: no "1" -> 1 or "true" -> True coercion, which zod would refuse (JSON from JS never writes 1.0
    # for an integer, so refusing 1.0 where zod wants an int costs nothing).
    model_config = ConfigDict(extra="ignore", strict=True)


class ToolCallFunction(_Model):
    name: str
    arguments: str


class ToolCall(_Model):
    id: str
    type: Literal["function"] = "function"
    function: ToolCallFunction


class ChatMessage(_Model):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = ""
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None


class ToolFunctionSpec(_Model):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ToolSpec(_Model):
    type: Literal["function"]
    function: ToolFunctionSpec


class ChatCompletionRequest(_Model):
    model: str = Field(description="Base model id, or `<run>@<step>` for a run's LoRA checkpoint.")
    messages: list[ChatMessage] = Field(min_length=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    n: int | None = Field(default=None, ge=1, le=256)
    seed: int | None = None
    stop: str | list[str] | None = None
    logprobs: bool | None = None
    tools: list[ToolSpec] | None = None
    return_token_ids: bool | None = Field(default=None, description="vLLM extension: return token ids.")


class TokenLogprob(_Model):
    token: str
    logprob: float


class ChoiceLogprobs(_Model):
    content: list[TokenLogprob]


class AssistantMessage(_Model):
    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: list[ToolCall] | None = None


class ChatChoice(_Model):
    index: int
    message: AssistantMessage
    finish_reason: Literal["stop", "length", "tool_calls"] | None
    logprobs: ChoiceLogprobs | None = None
    # Sampled completion token ids, in order (the stop/EOS token included when it was sampled).
    token_ids: list[int] | None = None


class Usage(_Model):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletionResponse(_Model):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage
    # Token ids of the rendered prompt (chat template applied), exactly what the model was fed.
    prompt_token_ids: list[int] | None = None


class EngineMemory(_Model):
    rss_bytes: float
    gpu_allocated_bytes: float | None


class EngineHealth(_Model):
    status: Literal["ok", "loading", "error"]
    backend: str
    device: str
    model: str
    max_context_tokens: int
    memory: EngineMemory
    error: str | None = None
