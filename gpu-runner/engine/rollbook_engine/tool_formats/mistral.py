"""Mistral's `[TOOL_CALLS]` format in its JSON-list spelling (tokenizer versions v3 to v7: Mistral-7B-Instruct
v0.3, Mixtral-8x22B, Mistral-Nemo, Mistral-Small-2501):

    [TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": …, "arguments": …}]

all of a turn's calls in one list (v3's templates write a space after the marker, later ones none; both are
read, and the prefill copies the template's). v11's per-call `[TOOL_CALLS]name[ARGS]{…}` spelling (Mistral
Small 3.1+, Magistral, Devstral) is mistral_v11.py, chosen for a template that writes `[ARGS]`.

Call ids are 9 alphanumeric characters, as Mistral's templates require of the ids sent back in the history
(they raise on any other). `[TOOL_CALLS]` is a special token in Mistral's own tokenizers, and the sampled text
is decoded without special tokens; so when it is one, a reply that starts with `[` is read as the call list
that followed it (as the sampled token ids show).
"""

from __future__ import annotations

import json
from typing import Any

from ..contracts.chat import MalformedToolCall, NamedToolChoice, ToolCall, ToolSpec
from .base import (
    CallSpan, ParsedReply, Span, ToolFormat, alnum_id, array_items, checked_call, finish, hold_from_marker,
    json_call_content, raw_arguments,
)
from .grammar import json_call_grammar

MARK = "[TOOL_CALLS]"
_DECODER = json.JSONDecoder()


class MistralFormat(ToolFormat):
    name = "mistral"
    call_close = "}]"  # a one-call list

    def __init__(self, space: bool = True, marker_is_special: bool = False) -> None:
        self.space = space  # the template writes `[TOOL_CALLS] [` (v3) rather than `[TOOL_CALLS][`
        self.marker_is_special = marker_is_special  # decoding drops it from the sampled text

    def parse(self, text: str, tool_names: list[str], params: dict[str, Any] | None = None) -> ParsedReply:
        as_sampled = text
        if self.marker_is_special and MARK not in text and text.lstrip().startswith("["):
            text = MARK + text.lstrip()
        # Offsets in `text` less this are offsets in the text as sampled (a marker put back is not in it).
        shift = len(text) - len(as_sampled)
        kept: list[str] = []
        calls: list[ToolCall] = []
        malformed: list[MalformedToolCall] = []
        spans: list[CallSpan] = []
        pos = 0
        while (start := text.find(MARK, pos)) != -1:
            kept.append(text[pos:start])
            at = len(text) - len(text[start + len(MARK):].lstrip())
            try:
                items, end = _DECODER.raw_decode(text, at)
            except ValueError as err:
                kept.append(text[start:])
                malformed.append(MalformedToolCall(text=text[start:], error=f"invalid JSON after {MARK}: {err}"))
                pos = len(text)
                break
            found = [(item, *_call(item, tool_names, text[at:end]))
                     for item in (items if isinstance(items, list) else [items])]
            if any(call is not None for _, call, _ in found):
                spans.append(_span(text, start, at, end, [call is not None for _, call, _ in found], shift))
            calls += [call for _, call, _ in found if call is not None]
            bad = [(json.dumps(item, ensure_ascii=False), error) for item, call, error in found if call is None]
            malformed += [MalformedToolCall(text=spelled, error=error) for spelled, error in bad]
            if len(bad) == len(found):  # nothing taken: the text stays as the model wrote it
                kept.append(text[start:end])
            else:  # the calls that failed stay in the content, each as a JSON object
                kept += [spelled for spelled, _ in bad]
            pos = end
        kept.append(text[pos:])
        if not calls:  # the content is the text as decoded, without a marker put back for parsing
            return ParsedReply(as_sampled, [], malformed)
        return finish(kept, calls, malformed, spans)

    def prefill(self, tool_choice: str | NamedToolChoice | None) -> str:
        opening = MARK + (" [" if self.space else "[")
        if tool_choice == "required":
            return opening + '{"name": "'
        if isinstance(tool_choice, NamedToolChoice):
            return opening + '{"name": ' + json.dumps(tool_choice.function.name, ensure_ascii=False) + ', "arguments":'
        return ""

    def call_grammar(self, tool_choice: str | NamedToolChoice | None, tools: list[ToolSpec]) -> str | None:
        return json_call_grammar(tool_choice, tools, self.args_key, self.call_close, self.tokens)

    def hold_from(self, text: str) -> int:
        if self.marker_is_special and (not text.strip() or text.lstrip().startswith("[")):
            return 0  # the marker may have been sampled and dropped from the text
        return hold_from_marker(text, MARK)


def _span(text: str, start: int, at: int, end: int, valid: list[bool], shift: int) -> CallSpan:
    """The list from `[TOOL_CALLS]` (start) to its `]` (end), in the sampled text's offsets: each valid call's
    name and arguments are content, an item that is not a call stays content whole (it is in the reply's
    content), the marker and the list's `[`, `,`, `]` and the envelopes are scaffolding."""
    items = array_items(text, at) or [(at, end)]
    content: list[Span] = []
    for (a, b), ok in zip(items, valid):
        content += json_call_content(text, a, ("arguments",)) if ok else [(a, b)]
    return CallSpan((max(0, start - shift), end - shift), [(max(0, a - shift), b - shift) for a, b in content])


def _call(item: Any, tool_names: list[str], text: str) -> tuple[ToolCall | None, str]:
    if not isinstance(item, dict):
        return None, "not a JSON object"
    args = item.get("arguments", {})
    return checked_call(item.get("name"), args, tool_names, call_id=alnum_id(9),
                        raw=raw_arguments(text, "arguments", args))
