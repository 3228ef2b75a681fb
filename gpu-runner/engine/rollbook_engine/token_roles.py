"""Which sampled tokens were scaffolding and which were content (the token view shows it; docs/sdk.md's table
says what each tool format counts as which).

- content: the reply's text, and a parsed tool call's name and arguments (qwen3_coder: each parameter's name
  and value);
- scaffolding: the format's markers and the call envelope around a parsed call (`<tool_call>`, `{"name": "`,
  `[TOOL_CALLS]`, `;` between calls…, tool_formats/ says where each call's parts are: ParsedReply.spans), the
  whitespace that only lays calls out, a special token the text skips (end of turn, a marker that is one
  token), and a stop string the reply was cut before.

Computed per character of the parsed text (prefill + sampled text), then per token from the characters each
token wrote (incremental_decode.py). A token that writes both is content: it carries some of the call's name
or arguments, which is what a reward reads. A token holding part of a UTF-8 character writes nothing by itself
and takes the role of the token that completes the character. A malformed call is not a call: its text stays
in the reply's content, and so are its tokens.
"""

from __future__ import annotations

import logging
from typing import Literal

from .incremental_decode import IncrementalDecoder
from .tool_formats.base import CallSpan

log = logging.getLogger(__name__)

Role = Literal["content", "scaffolding"]
_MAX_PREFIX_DECODES = 4096


def content_chars(text: str, spans: list[CallSpan]) -> list[bool]:
    """For each character of `text`: is it content? Everything is, except each call's span less its content
    parts, and a stretch of whitespace outside calls that touches a call or ends the text (the layout that
    parse drops from the content, as finish() does)."""
    n = len(text)
    content = [True] * n
    if not spans:
        return content
    in_call = [False] * n
    for span in spans:
        for i in range(max(0, span.whole[0]), min(n, span.whole[1])):
            content[i], in_call[i] = False, True
        for a, b in span.content:
            for i in range(max(0, a), min(n, b)):
                content[i] = True
    i = 0
    while i < n:
        if in_call[i] or not text[i].isspace():
            i += 1
            continue
        j = i
        while j < n and not in_call[j] and text[j].isspace():
            j += 1
        if (i > 0 and in_call[i - 1]) or j == n or in_call[j]:
            for k in range(i, j):
                content[k] = False
        i = j
    return content


def token_pieces(tokenizer, token_ids: list[int], text: str) -> list[str] | None:
    """The text each token wrote, their concatenation starting with `text` (the reply, cut before a stop string
    the tokens go on to write), or None when the tokenizer's pieces do not add up to it."""
    decoder = IncrementalDecoder(tokenizer)
    pieces = [decoder.step(t) for t in token_ids]
    if "".join(pieces).startswith(text):
        return pieces
    # Another decoder (vLLM's, a tokenizer whose stream cleans up differently): the growth of the whole
    # decoded prefix, token by token, which is what the reply's text is made of. Quadratic: bounded.
    if len(token_ids) > _MAX_PREFIX_DECODES:
        return None
    pieces, before = [], ""
    for i in range(len(token_ids)):
        now = tokenizer.decode(token_ids[:i + 1], skip_special_tokens=True)
        if not now.startswith(before) or now.endswith("\ufffd"):
            pieces.append("")
            continue
        pieces.append(now[len(before):])
        before = now
    return pieces if "".join(pieces).startswith(text) else None


def token_roles(tokenizer, special_ids: set[int], token_ids: list[int], parsed_text: str, prefill: str,
                spans: list[CallSpan]) -> list[Role]:
    """One role per sampled token id. `parsed_text` is what the format parsed (the prefill, which is prompt,
    then the sampled text); `spans` its calls."""
    sampled = parsed_text[len(prefill):]
    mask = content_chars(parsed_text, spans)[len(prefill):]
    pieces = token_pieces(tokenizer, token_ids, sampled)
    if pieces is None:  # nothing to map characters from: every written token counts as content
        log.warning("token roles: the sampled tokens do not decode to the reply's text; all marked content")
        return ["scaffolding" if t in special_ids else "content" for t in token_ids]
    roles: list[Role | None] = []
    at = 0
    for token_id, piece in zip(token_ids, pieces):
        start, at = at, at + len(piece)
        if not piece:
            roles.append("scaffolding" if token_id in special_ids else None)
        elif start >= len(sampled):
            roles.append("scaffolding")  # the stop string: not part of the reply
        else:
            roles.append("content" if any(mask[start:min(at, len(sampled))]) else "scaffolding")
    # A piece of a character: the role of the token that completed it (content if none did).
    following: Role = "content"
    for i in range(len(roles) - 1, -1, -1):
        role = roles[i]
        if role is None:
            roles[i] = following
        elif token_ids[i] not in special_ids:
            following = role
    return [r or "content" for r in roles]
