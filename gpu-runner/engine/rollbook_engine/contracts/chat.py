"""Mirror of contracts/chat.ts: the engine's OpenAI-compatible chat API.

Field names, optionality, defaults and bounds follow the zod schemas one to one (tests/test_chat_contract.py
compares these models with the zod file's JSON Schema); the field docs live there, in `.describe()`. Unknown
keys are ignored, as zod's default object does. The rules between fields (zod's ValidChatCompletionRequest)
are field validators here, so an error names the field at fault. Note for serialising: zod's `.optional()`
rejects null, so dump responses with `exclude_none=True` (server.py does).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, ValidationInfo, field_validator, model_serializer,
)

from ..identifiers import is_identifier
from ..identifiers import rule as identifier_rule


class _Model(BaseModel):
    # strict: no "1" -> 1 or "true" -> True coercion, which zod would refuse (JSON from JS never writes 1.0
    # for an integer, so refusing 1.0 where zod wants an int costs nothing).
    model_config = ConfigDict(extra="ignore", strict=True)

    @model_serializer(mode="wrap")
    def _drop_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # zod's .optional() rejects null, while a required .nullable() field (a message's content, a chunk's
        # finish_reason) must be present even when null: drop None only where the field is optional.
        data = handler(self)
        fields = type(self).model_fields
        return {k: v for k, v in data.items() if v is not None or (k in fields and fields[k].is_required())}


class NestedFieldError(ValueError):
    """A validator's error about a field inside the one it validates (`continue_from.message_count`): the
    server reports `path` under the validated field, as zod's issue path does."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


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


def _tool_name(name: str) -> str:
    # The shared grammar (contracts/identifiers.json), as zod's ToolName: names go into prompts and grammars.
    if not is_identifier("tool_name", name):
        raise ValueError(f"a tool name is {identifier_rule('tool_name')}")
    return name


class ToolFunctionSpec(_Model):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None

    _name_ok = field_validator("name")(_tool_name)


class ToolSpec(_Model):
    type: Literal["function"]
    function: ToolFunctionSpec


class NamedFunction(_Model):
    name: str

    _name_ok = field_validator("name")(_tool_name)


class NamedToolChoice(_Model):
    type: Literal["function"]
    function: NamedFunction


ToolChoice = Literal["none", "auto", "required"] | NamedToolChoice


class ContinueFrom(_Model):
    token_ids: list[Annotated[int, Field(ge=0)]] = Field(min_length=1)
    message_count: int = Field(ge=1)


class TextFormat(_Model):
    type: Literal["text"]


class JsonObjectFormat(_Model):
    type: Literal["json_object"]


class JsonSchemaSpec(_Model):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    description: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class JsonSchemaFormat(_Model):
    type: Literal["json_schema"]
    json_schema: JsonSchemaSpec


ResponseFormat = Annotated[TextFormat | JsonObjectFormat | JsonSchemaFormat, Field(discriminator="type")]

# The words of contracts/chat.ts's JSON_WITH_AUTO_TOOLS.
JSON_WITH_AUTO_TOOLS = ('a JSON reply cannot also be a tool call: with tools and tool_choice "auto", drop '
                        'response_format, force the call (tool_choice "required" or a function), or drop the tools')


class StreamOptions(_Model):
    include_usage: bool | None = None


class ChatCompletionRequest(_Model):
    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    n: int | None = Field(default=None, ge=1, le=256)
    seed: int | None = None
    stop: str | list[str] | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    tools: list[ToolSpec] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    return_token_ids: bool | None = None
    # vLLM's --return-tokens-as-token-ids, per request: logprobs tokens written "token_id:<id>" (what ART parses).
    return_tokens_as_token_ids: bool | None = None
    continue_from: ContinueFrom | None = None
    # OpenAI's end-user id. The engine shares batch slots fairly between users (the runner sends the run id).
    user: str | None = Field(default=None, max_length=256)

    # Field validators run in declaration order, so each sees the fields declared above it in info.data.
    @field_validator("top_logprobs")
    @classmethod
    def _top_needs_logprobs(cls, k: int | None, info: ValidationInfo) -> int | None:
        if k and not info.data.get("logprobs"):
            raise ValueError("top_logprobs needs logprobs: true")
        return k

    @field_validator("tool_choice")
    @classmethod
    def _choice_needs_tools(cls, choice: ToolChoice | None, info: ValidationInfo) -> ToolChoice | None:
        if choice is None or choice in ("none", "auto"):
            return choice
        names = [t.function.name for t in info.data.get("tools") or []]
        if not names:
            raise ValueError("tool_choice needs tools")
        if isinstance(choice, NamedToolChoice) and choice.function.name not in names:
            raise ValueError(f"no tool named '{choice.function.name}' in tools")
        return choice

    @field_validator("response_format")
    @classmethod
    def _json_not_with_auto_tools(cls, fmt: Any, info: ValidationInfo) -> Any:
        choice = info.data.get("tool_choice")
        if (isinstance(fmt, JsonObjectFormat | JsonSchemaFormat) and info.data.get("tools")
                and choice in (None, "auto")):
            raise ValueError(JSON_WITH_AUTO_TOOLS)
        return fmt

    @field_validator("continue_from")
    @classmethod
    def _continue_fits_messages(cls, cont: ContinueFrom | None, info: ValidationInfo) -> ContinueFrom | None:
        messages = info.data.get("messages")
        if cont is None or messages is None:
            return cont
        if cont.message_count >= len(messages):
            raise NestedFieldError("message_count", f"must be less than the number of messages ({len(messages)}): "
                                                    "new messages must follow")
        if messages[cont.message_count - 1].role != "assistant":
            raise NestedFieldError("message_count", "the last continued message must be the assistant reply the "
                                                    "token ids end with")
        return cont

    @property
    def completion_limit(self) -> int | None:
        """max_tokens / max_completion_tokens (newer clients send the latter); with both, the smaller."""
        limits = [x for x in (self.max_tokens, self.max_completion_tokens) if x is not None]
        return min(limits) if limits else None


class TopLogprob(_Model):
    token: str
    logprob: float
    bytes: list[int] | None = None


class TokenLogprob(_Model):
    token: str
    logprob: float
    bytes: list[int] | None = None
    top_logprobs: list[TopLogprob] | None = None


class ChoiceLogprobs(_Model):
    content: list[TokenLogprob]


class MalformedToolCall(_Model):
    text: str
    error: str


FinishReason = Literal["stop", "length", "tool_calls"]


class AssistantMessage(_Model):
    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: list[ToolCall] | None = None


class ChatChoice(_Model):
    index: int
    message: AssistantMessage
    finish_reason: FinishReason | None
    logprobs: ChoiceLogprobs | None = None
    token_ids: list[int] | None = None
    # With return_token_ids: one per token id, what it wrote (token_roles.py). Not streamed: a stream's calls are
    # parsed only when it ends.
    token_roles: list[Literal["content", "scaffolding"]] | None = None
    malformed_tool_calls: list[MalformedToolCall] | None = None


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
    prompt_token_ids: list[int] | None = None


class ToolCallDeltaFunction(_Model):
    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(_Model):
    index: int
    id: str | None = None
    type: Literal["function"] | None = None
    function: ToolCallDeltaFunction | None = None


class ChunkDelta(_Model):
    role: Literal["assistant"] | None = None
    content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class ChunkChoice(_Model):
    index: int
    delta: ChunkDelta
    finish_reason: FinishReason | None
    logprobs: ChoiceLogprobs | None = None
    token_ids: list[int] | None = None
    malformed_tool_calls: list[MalformedToolCall] | None = None


class ChatCompletionChunk(_Model):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = None
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
    batch_capacity: int | None = Field(default=None, ge=1)  # rows one batch samples: the runner keeps at most this many calls on it
    # The tool-call format detected from the model's chat template (tool_formats/).
    tool_format: Literal["hermes", "qwen3_coder", "llama3_json", "mistral"] | None = None
