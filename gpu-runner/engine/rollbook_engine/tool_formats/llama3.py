"""Llama 3.1 / 3.2 / 3.3's JSON tool format: the whole reply is the call, as their templates write it,

    {"name": "get_weather", "parameters": {"city": "Paris"}}

right after the assistant header, optionally behind `<|python_tag|>`. Parallel calls are consecutive objects
separated by `;` (Meta's templates render one call per turn; vLLM's llama3_json parser reads `; `-separated
ones, and so does this). "arguments" is accepted in place of "parameters", as vLLM does. A reply that does
not start with `{` (or the tag) is content: like vLLM, a call is only read at the start of the reply.
"""

from __future__ import annotations

import json
from typing import Any

from ..contracts.chat import MalformedToolCall, NamedToolChoice, ToolCall
from ..contracts.chat import ToolSpec
from .base import CallSpan, ParsedReply, ToolFormat, checked_call, finish, json_call_content, raw_arguments, shifted
from .grammar import json_call_grammar

TAG = "<|python_tag|>"
_DECODER = json.JSONDecoder()


class Llama3JsonFormat(ToolFormat):
    name = "llama3_json"
    args_key = "parameters"
    call_close = "}"  # one call, then end of turn

    def parse(self, text: str, tool_names: list[str], params: dict[str, Any] | None = None) -> ParsedReply:
        body = text.lstrip()
        if body.startswith(TAG):
            body = body[len(TAG):].lstrip()
        if not body.startswith("{"):
            return ParsedReply(text)
        kept: list[str] = []
        calls: list[ToolCall] = []
        malformed: list[MalformedToolCall] = []
        spans: list[CallSpan] = []
        base = len(text) - len(body)  # body's offset in text, for the call spans
        pos = 0
        while pos < len(body) and body[pos] == "{":
            try:
                obj, end = _DECODER.raw_decode(body, pos)
            except ValueError as err:
                kept.append(body[pos:])
                malformed.append(MalformedToolCall(text=body[pos:], error=f"invalid JSON: {err}"))
                pos = len(body)
                break
            call, error = _call(obj, tool_names, body[pos:end])
            after = _after_separator(body, end)
            if call is None:
                kept.append(body[pos:end])
                malformed.append(MalformedToolCall(text=body[pos:end], error=error))
            else:
                calls.append(call)
                # The first call's span starts the reply (the tag before it); each ends past its `;`.
                spans.append(CallSpan((0 if pos == 0 else base + pos, base + after),
                                      shifted(json_call_content(body, pos, ("parameters", "arguments")), base)))
            pos = after
        if not calls:
            return ParsedReply(text, [], malformed)
        kept.append(body[pos:].lstrip())
        return finish(kept, calls, malformed, spans)

    def prefill(self, tool_choice: str | NamedToolChoice | None) -> str:
        # No space after the last colon: the template writes `"parameters": {` and the tokenizers these
        # families use split it as `":` + ` {`, so the model continues from a boundary it has seen.
        if tool_choice == "required":
            return '{"name": "'
        if isinstance(tool_choice, NamedToolChoice):
            return '{"name": ' + json.dumps(tool_choice.function.name, ensure_ascii=False) + ', "parameters":'
        return ""

    def call_grammar(self, tool_choice: str | NamedToolChoice | None, tools: list[ToolSpec]) -> str | None:
        return json_call_grammar(tool_choice, tools, self.args_key, self.call_close, self.tokens)

    def hold_from(self, text: str) -> int:
        body = text.lstrip()
        if not body or body.startswith(("{", TAG)) or TAG.startswith(body):
            return 0  # the reply is (or may still become) a call: held whole, parsed when it ends
        return len(text)


def _call(obj: Any, tool_names: list[str], text: str) -> tuple[ToolCall | None, str]:
    if not isinstance(obj, dict):
        return None, "not a JSON object"
    key = "parameters" if "parameters" in obj else "arguments"
    args = obj.get(key, {})
    return checked_call(obj.get("name"), args, tool_names, raw=raw_arguments(text, key, args))


def _after_separator(body: str, pos: int) -> int:
    """Past whitespace and one `;` between two calls (at the next `{`), else where the calls end."""
    rest = body[pos:].lstrip()
    if rest.startswith(";"):
        rest = rest[1:].lstrip()
    if rest.startswith("{"):
        return len(body) - len(rest)
    return pos
