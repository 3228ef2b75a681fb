"""Mistral's per-call `[TOOL_CALLS]` spelling, tokenizer v11 on (Mistral Small 3.1/3.2, Magistral, Devstral):

    [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}

one `[TOOL_CALLS]name[ARGS]{arguments}` per call, parallel calls back to back. Templates that also write the
call's id (`[TOOL_CALLS]name[CALL_ID]a1b2c3d4e[ARGS]{…}`) are read too. Detected by `[ARGS]` in a template that
writes `[TOOL_CALLS]` (the v3–v7 JSON list is mistral.py); /health names both "mistral", as vLLM's parser does.

In Mistral's own tokenizers `[TOOL_CALLS]`, `[ARGS]` and `[CALL_ID]` are special tokens, and sampled text is
decoded without special tokens: a call then arrives as `get_weather{"city": "Paris"}`. So where they are special
(`special`, set from the tokenizer), a reply that starts with an offered tool's name directly followed by `{`
is read as back-to-back `name{arguments}` calls, as vLLM's mistral parser reads v11 output; a reply that starts
any other way is content. Call ids are 9 letters and digits, as the templates require.

tool_choice: the prefill is `[TOOL_CALLS]` ("required") or `[TOOL_CALLS]name` (named), and the model
continues under call_grammar: an offered name ("required"), `[ARGS]` (as its token where it is one:
grammar.spelled), the arguments as JSON matching the schema, then only the end of the turn. The grammar writes no `[CALL_ID]`: the
models write the ids only in the history the template renders. A forced call streams as the JSON formats' do:
the name once it is written, then the arguments as the tokens write them (forced_call_so_far).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..contracts.chat import MalformedToolCall, NamedToolChoice, ToolCall, ToolSpec
from .base import CallSpan, ParsedReply, ToolFormat, alnum_id, checked_call, finish, hold_from_marker
from .grammar import _lit, forced_tools, json_args_rules, spelled

MARK, ARGS, CALL_ID = "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"
MARKERS = (MARK, ARGS, CALL_ID)
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")  # OpenAI function names are [a-zA-Z0-9_-]{1,64}
_ID = re.compile(r"[A-Za-z0-9]*")
_DECODER = json.JSONDecoder()


class MistralV11Format(ToolFormat):
    name = "mistral"

    def __init__(self, special: Mapping[str, int] | None = None) -> None:
        # The markers that are special tokens (text → id): dropped from decoded text, written by id in grammars.
        self.special = dict(special or {})

    def parse(self, text: str, tool_names: list[str], params: dict[str, Any] | None = None) -> ParsedReply:
        dropped = bool(self.special)
        start = text.find(MARK)
        if start == -1:
            if not dropped:
                return ParsedReply(text)
            start = len(text) - len(text.lstrip())
            m = _NAME.match(text, start)
            if m is None or m.group() not in tool_names or not text.startswith("{", m.end()):
                return ParsedReply(text)
        kept = [text[:start]]
        calls: list[ToolCall] = []
        malformed: list[MalformedToolCall] = []
        spans: list[CallSpan] = []  # for token roles: the name and the arguments are content, the markers not
        pos = start
        while pos < len(text):
            at = pos
            marked = text.startswith(MARK, pos)
            if not marked and not dropped:
                break
            if not marked:  # the next call's dropped marker may follow whitespace
                pos = len(text) - len(text[pos:].lstrip())
            call, error, end, content = _one_call(text, pos + len(MARK) if marked else pos, tool_names)
            if call is None:
                if not marked:  # not a call whose marker was dropped: the rest is content
                    pos = at
                    break
                kept.append(text[at:end])
                malformed.append(MalformedToolCall(text=text[at:end], error=error))
            else:
                calls.append(call)
                spans.append(CallSpan((at, end), content))
            pos = end
        kept.append(text[pos:])
        if not calls:
            return ParsedReply(text, [], malformed)
        return finish(kept, calls, malformed, spans)

    def prefill(self, tool_choice: str | NamedToolChoice | None) -> str:
        if tool_choice == "required":
            return MARK
        if isinstance(tool_choice, NamedToolChoice):
            # Not through `[ARGS]`: where it is text, tokenizers merge its `]` with the `{` that follows.
            return MARK + tool_choice.function.name
        return ""

    def hold_from(self, text: str) -> int:
        if self.special and re.fullmatch(r"\s*[A-Za-z0-9_.\-]*(\{.*)?", text, re.DOTALL):
            return 0  # may be a call whose markers were dropped from the text
        return hold_from_marker(text, MARK)

    def forced_call_so_far(self, written: str, tool_choice: str | NamedToolChoice,
                           params: dict[str, Any]) -> tuple[str | None, str]:
        """`written` follows the prefill: `NAME[ARGS]{…}` ("required") or `[ARGS]{…}` (named), `[ARGS]` absent
        where it is a special token the decoded text drops. The arguments are the JSON as written, which is what
        parse() keeps; nothing follows them but the end of the turn."""
        if isinstance(tool_choice, NamedToolChoice):
            name, rest = tool_choice.function.name, written
        else:
            m = _NAME.match(written)
            if m is None or m.end() == len(written):  # the name may still go on
                return None, ""
            name, rest = m.group(), written[m.end():]
        if rest.startswith(ARGS):
            rest = rest[len(ARGS):]
        elif ARGS.startswith(rest):  # `[ARGS]` being written (or nothing yet)
            return name, ""
        return name, rest if rest.startswith("{") else ""

    def call_grammar(self, tool_choice: str | NamedToolChoice | None, tools: list[ToolSpec]) -> str | None:
        forced = forced_tools(tool_choice, tools)
        if forced is None:
            return None
        names = list(forced)
        rules = json_args_rules(forced)
        args = spelled(ARGS, {**self.tokens, **self.special})
        if tool_choice == "required":
            start = "start: " + " | ".join(f"{_lit(n)} {args} args_{i}" for i, n in enumerate(names))
        else:
            start = f"start: {args} args_0"
        return "\n".join([start, *rules])


def _one_call(text: str, pos: int, tool_names: list[str]) -> tuple[ToolCall | None, str, int, list[tuple[int, int]]]:
    """The call spelled from `pos` (after its `[TOOL_CALLS]`, or where a dropped one was): the name, an optional
    `[CALL_ID]id`, `[ARGS]` (absent where it was dropped), the arguments object. (call, "", end, [name span,
    arguments span]) or (None, why, where what was read ends, [])."""
    m = _NAME.match(text, pos)
    if m is None:
        return None, f"no function name after {MARK}", pos, []
    name, pos = m.group(), m.end()
    name_span = (m.start(), m.end())
    if text.startswith(CALL_ID, pos):
        pos = _ID.match(text, pos + len(CALL_ID)).end()  # type: ignore[union-attr]  # matches the empty string
    if text.startswith(ARGS, pos):
        pos += len(ARGS)
    try:
        args, end = _DECODER.raw_decode(text, pos)
    except ValueError as err:
        nxt = text.find(MARK, pos)
        return None, f"invalid JSON arguments for '{name}': {err}", len(text) if nxt == -1 else nxt, []
    call, error = checked_call(name, args, tool_names, call_id=alnum_id(9), raw=text[pos:end])
    return call, error, end, [name_span, (pos, end)]
