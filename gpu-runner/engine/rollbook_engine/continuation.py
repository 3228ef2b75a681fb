"""`continue_from`: the next call of a multi-turn rollout, appended to the exact tokens of the earlier turns.

Re-rendering a conversation and tokenising it again does not give back the tokens the model saw and sampled:
"He"+"llo" comes back as "Hello", a tool call the model wrote as `{"name":"add"}` comes back as the template
writes it. The trainer needs the sampled tokens, so the runner sends them (the previous call's
prompt_token_ids + its token_ids) and how many messages they cover; only the later messages are rendered.

How the text after the covered messages is found without trusting any re-tokenisation: the covered
conversation is rendered with the sampled reply's content replaced by a unique sentinel, which shows what the
template writes after an assistant reply (e.g. `<|im_end|>\\n`; its end-of-turn token is dropped when the
sampled ids already end with it); the whole conversation (generation prompt on) is rendered with the same
sentinel, and what follows the covered part is the new turns' text. Both are text; prompt.py tokenises them
without adding special tokens and appends them to the token ids as given.
"""

from __future__ import annotations

import uuid

from . import chat_format
from .contracts.chat import ChatMessage, ContinueFrom, ToolSpec
from .errors import RequestError


def continue_text(tokenizer, messages: list[ChatMessage], tools: list[ToolSpec] | None, cont: ContinueFrom,
                  eos_ids: set[int], vocab_size: int) -> tuple[list[int], str]:
    """(the earlier turns' token ids as given, the text to tokenise and append after them)."""
    ids = list(cont.token_ids)
    bad = next((i for i in ids if i >= vocab_size), None)
    if bad is not None:
        raise RequestError(f"invalid request: continue_from.token_ids: token id {bad} is outside the vocabulary "
                           f"(size {vocab_size})", "continue_from.token_ids")
    # The contract has checked 1 <= message_count < len(messages) and that the last covered one is the reply.
    k = cont.message_count
    sentinel = f"\u27e6rollbook-continue-{uuid.uuid4().hex}\u27e7"
    marked = list(messages)
    marked[k - 1] = ChatMessage(role="assistant", content=sentinel, name=messages[k - 1].name)
    head = chat_format.render(tokenizer, marked[:k], tools, generation_prompt=False)
    full = chat_format.render(tokenizer, marked, tools, generation_prompt=True)
    if head.count(sentinel) != 1 or not full.startswith(head):
        raise RequestError(
            "invalid request: continue_from.message_count: the chat template writes the earlier turns differently "
            "once later messages follow, so they cannot be continued token-exactly; send the conversation "
            "without continue_from", "continue_from.message_count")
    after_reply = head[head.index(sentinel) + len(sentinel):]
    if ids[-1] in eos_ids:
        end_text = tokenizer.decode([ids[-1]])
        if after_reply.startswith(end_text):  # the model sampled the end of its turn itself
            after_reply = after_reply[len(end_text):]
    return ids, after_reply + full[len(head):]
