"""From sampled tokens to OpenAI's response objects; shared by the plain and the streamed response, so the
two say the same thing (the streamed one is assembled from the same final reply, see streaming.py)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from .backends.base import GenerationResult
from .contracts.chat import (
    FinishReason,
    AssistantMessage, ChatChoice, ChatCompletionRequest, ChatCompletionResponse, ChoiceLogprobs, MalformedToolCall,
    TokenLogprob, ToolCall, TopLogprob, Usage,
)
from .prompt import Prompt
from .token_roles import Role, token_roles
from .tool_formats.base import CallSpan
from .vocab import Vocab


@dataclass
class FinalReply:
    content: str | None
    finish_reason: FinishReason
    calls: list[ToolCall] = field(default_factory=list)
    malformed: list[MalformedToolCall] = field(default_factory=list)
    spans: list[CallSpan] = field(default_factory=list)  # where the calls are in prefill + text (token_roles.py)


def final_reply(prompt: Prompt, result: GenerationResult) -> FinalReply:
    """The reply's content, tool calls and finish reason. With tools, the text parsed is prefill + sample."""
    if prompt.tool_names is None:
        return FinalReply(result.text, result.finish_reason)
    parsed = prompt.tool_format.parse(prompt.prefill + result.text, prompt.tool_names, prompt.tool_params)
    # "tool_calls" only for a reply that ended by itself: a cut one ("length") says so.
    finish = "tool_calls" if parsed.calls and result.finish_reason == "stop" else result.finish_reason
    return FinalReply(parsed.content, finish, parsed.calls, parsed.malformed, parsed.spans)


def reply_token_roles(prompt: Prompt, result: GenerationResult, reply: FinalReply, vocab: Vocab) -> list[Role]:
    """Each sampled token's role, content or scaffolding (token_roles.py), from the calls the reply parsed."""
    return token_roles(vocab.tokenizer, vocab.special_ids, list(result.token_ids), prompt.prefill + result.text,
                       prompt.prefill, reply.spans)


def logprob_entry(vocab: Vocab, token_id: int, logprob: float, top: list[tuple[int, float]],
                  as_ids: bool = False) -> TokenLogprob:
    # as_ids: vLLM's return_tokens_as_token_ids: "token_id:<id>" names the exact token where text cannot
    # (a byte of a multi-byte character, two ids that decode alike); bytes stay the token's own.
    def text(t: int) -> str:
        return f"token_id:{t}" if as_ids else vocab.token_text(t)

    return TokenLogprob(
        token=text(token_id), logprob=logprob, bytes=vocab.token_bytes(token_id),
        top_logprobs=[TopLogprob(token=text(t), logprob=lp, bytes=vocab.token_bytes(t)) for t, lp in top],
    )


def logprob_entries(vocab: Vocab, result: GenerationResult, as_ids: bool = False) -> list[TokenLogprob]:
    tops = result.top_logprobs or [[] for _ in result.token_ids]
    return [logprob_entry(vocab, t, lp, top, as_ids) for t, lp, top in zip(result.token_ids, result.logprobs, tops)]


def completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def usage(prompt: Prompt, results: list[GenerationResult]) -> Usage:
    completion = sum(len(r.token_ids) for r in results)
    return Usage(prompt_tokens=len(prompt.token_ids), completion_tokens=completion,
                 total_tokens=len(prompt.token_ids) + completion)


def chat_response(req: ChatCompletionRequest, prompt: Prompt, results: list[GenerationResult],
                  vocab: Vocab) -> ChatCompletionResponse:
    choices = []
    for index, r in enumerate(results):
        reply = final_reply(prompt, r)
        choices.append(ChatChoice(
            index=index,
            message=AssistantMessage(content=reply.content, tool_calls=reply.calls or None),
            finish_reason=reply.finish_reason,
            logprobs=ChoiceLogprobs(content=logprob_entries(vocab, r, bool(req.return_tokens_as_token_ids)))
            if req.logprobs else None,
            token_ids=list(r.token_ids) if req.return_token_ids else None,
            token_roles=reply_token_roles(prompt, r, reply, vocab) if req.return_token_ids else None,
            malformed_tool_calls=reply.malformed or None,
        ))
    return ChatCompletionResponse(
        id=completion_id(), created=int(time.time()), model=req.model, choices=choices, usage=usage(prompt, results),
        prompt_token_ids=prompt.token_ids if req.return_token_ids else None,
    )
