"""A request's prompt: rendered (chat_format / continuation), prefilled for tool_choice, bounded by length
before it is tokenised, then tokenised without adding special tokens (the template wrote them; this is
what `apply_chat_template(tokenize=True)` does).

The bound: no token is longer than the vocabulary's longest (vocab.py), so a text of B UTF-8 bytes is at
least ceil(B / longest) tokens. A multi-megabyte prompt is refused from that alone, in milliseconds and
without the gigabytes tokenising it would take; a prompt that passes the bound is at most context × longest
bytes (well under a megabyte), cheap to tokenise, and then checked exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import chat_format, continuation, tool_calls
from .contracts.chat import ChatCompletionRequest
from .errors import RequestError
from .vocab import Vocab


@dataclass
class Prompt:
    token_ids: list[int]
    prefill: str  # text the reply was started with (tool_choice); its tokens end token_ids
    tool_names: list[str] | None  # tools offered: parse calls out of the reply; None: leave the reply as text


def build_prompt(tokenizer, vocab: Vocab, req: ChatCompletionRequest, max_context: int,
                 eos_ids: set[int]) -> Prompt:
    tools = req.tools if req.tools and req.tool_choice != "none" else None
    prefill = tool_calls.prefill(req.tool_choice) if tools else ""
    if req.continue_from is not None:
        head, text = continuation.continue_text(tokenizer, req.messages, tools, req.continue_from, eos_ids,
                                                vocab.size)
    else:
        head, text = [], chat_format.render(tokenizer, req.messages, tools, generation_prompt=True)
    text += prefill
    at_least = len(head) + vocab.min_tokens(text)
    if at_least >= max_context:
        raise RequestError(
            f"invalid request: messages: the prompt is at least {at_least} tokens ({len(text.encode('utf-8'))} bytes "
            f"of text{f' after {len(head)} continued tokens' if head else ''}, no token longer than "
            f"{vocab.longest_token_bytes} bytes); the model's context is {max_context}", "messages")
    ids = head + tokenizer.encode(text, add_special_tokens=False)
    if len(ids) >= max_context:
        raise RequestError(f"invalid request: messages: prompt is {len(ids)} tokens, the model's context is "
                           f"{max_context}", "messages")
    return Prompt(ids, prefill, [t.function.name for t in tools] if tools else None)
