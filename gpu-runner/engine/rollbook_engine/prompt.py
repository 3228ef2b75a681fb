"""A request's prompt: rendered (chat_format / continuation), prefilled for tool_choice (with the grammar the
rest of the forced call must follow, constrained.py), bounded by length
before it is tokenised, then tokenised without adding special tokens (the template wrote them; this is
what `apply_chat_template(tokenize=True)` does). POST /tokenize answers with the same ids (tokenize_route.py),
so what the trainer is given as a prompt is what chat completions fed the model.

The bound: no token is longer than the vocabulary's longest (vocab.py), so a text of B UTF-8 bytes is at
least ceil(B / longest) tokens. A multi-megabyte prompt is refused from that alone, in milliseconds and
without the gigabytes tokenising it would take; a prompt that passes the bound is at most context × longest
bytes (well under a megabyte), cheap to tokenise, and then checked exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import chat_format, continuation, tool_formats
from .constrained import checked_grammar
from .contracts.chat import ChatCompletionRequest, ToolSpec
from .errors import RequestError
from .json_reply import json_reply_grammar
from .vocab import Vocab


@dataclass
class Prompt:
    token_ids: list[int]
    prefill: str  # text the reply was started with (tool_choice); its tokens end token_ids
    tool_names: list[str] | None  # tools offered: parse calls out of the reply; None: leave the reply as text
    # The model family's spelling of calls (from its chat template) and each tool's parameters schema.
    tool_format: tool_formats.ToolFormat = field(default_factory=tool_formats.HermesFormat)
    tool_params: dict[str, Any] = field(default_factory=dict)
    grammar: str | None = None  # Lark grammar the reply after the prefill must follow (constrained.py), or None
    forces_call: bool = False  # the grammar is a forced tool call's (else a JSON response_format's, json_reply.py)
    # With a prefill: the same prompt without it, as POST /tokenize renders the messages when the client sends
    # them back with no tool_choice (served_prompts.py matches a reply's record on it). None without a prefill.
    unprefilled_ids: list[int] | None = None


def shown_tools(req: ChatCompletionRequest) -> list[ToolSpec] | None:
    """The tools the model is shown: none with tool_choice "none"."""
    return req.tools if req.tools and req.tool_choice != "none" else None


def build_prompt(tokenizer, vocab: Vocab, req: ChatCompletionRequest, max_context: int,
                 eos_ids: set[int]) -> Prompt:
    tools = shown_tools(req)
    tool_format = tool_formats.for_tokenizer(tokenizer)
    prefill = tool_format.prefill(req.tool_choice) if tools else ""
    lark = tool_format.call_grammar(req.tool_choice, tools) if tools else None
    # A forced call is the reply whatever response_format says (OpenAI's order); else a JSON format constrains it.
    forces_call = lark is not None
    grammar: str | None
    if lark is not None:
        grammar = checked_grammar(lark, tokenizer, eos_ids, "tools")
    else:
        json_lark = json_reply_grammar(req.response_format)
        grammar = checked_grammar(json_lark, tokenizer, eos_ids, "response_format") if json_lark else None
    if req.continue_from is not None:
        head, text = continuation.continue_text(tokenizer, req.messages, tools, req.continue_from, eos_ids,
                                                vocab.size)
    else:
        head, text = [], chat_format.render(tokenizer, req.messages, tools, generation_prompt=True)
    # A prompt leaves room for at least one sampled token.
    ids = _bounded_ids(tokenizer, vocab, head, text + prefill, max_context - 1, max_context)
    # One more encode, only for a prefilled prompt (a forced call), so its record can be found again.
    unprefilled = _bounded_ids(tokenizer, vocab, head, text, max_context - 1, max_context) if prefill else None
    return Prompt(ids, prefill, [t.function.name for t in tools] if tools else None, tool_format,
                  {t.function.name: t.function.parameters for t in tools or []}, grammar, forces_call, unprefilled)


def conversation_ids(tokenizer, vocab: Vocab, req: ChatCompletionRequest, max_context: int) -> list[int]:
    """The whole conversation (its last message included, no generation prompt, no prefill) as tokens, rendered
    with the tools build_prompt shows and tokenised the same way: how POST /tokenize re-tokenises a reply that
    was sampled elsewhere. It may fill the context (the trainer takes sequences up to its length)."""
    text = chat_format.render(tokenizer, req.messages, shown_tools(req), generation_prompt=False)
    return _bounded_ids(tokenizer, vocab, [], text, max_context, max_context)


def _bounded_ids(tokenizer, vocab: Vocab, head: list[int], text: str, limit: int, max_context: int) -> list[int]:
    """head + the tokens of `text`, refused (naming `messages`) beyond `limit` tokens: first from the byte bound,
    without tokenising, then exactly."""
    at_least = len(head) + vocab.min_tokens(text)
    if at_least > limit:
        raise RequestError(
            f"invalid request: messages: the prompt is at least {at_least} tokens ({len(text.encode('utf-8'))} bytes "
            f"of text{f' after {len(head)} continued tokens' if head else ''}, no token longer than "
            f"{vocab.longest_token_bytes} bytes); the model's context is {max_context}", "messages")
    ids = head + tokenizer.encode(text, add_special_tokens=False)
    if len(ids) > limit:
        raise RequestError(f"invalid request: messages: prompt is {len(ids)} tokens, the model's context is "
                           f"{max_context}", "messages")
    return ids
