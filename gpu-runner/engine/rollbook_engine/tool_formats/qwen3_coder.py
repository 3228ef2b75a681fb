"""The Qwen3-Coder / Qwen3.5 XML tool format, as their chat templates write a call:

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>
    </tool_call>

one block per call (parallel calls are consecutive blocks). Values are untyped text: the template writes a
string as is, a number or boolean with jinja's `| string`, an object or list as JSON. They are read back by the
type the tool's parameters schema gives the parameter, as vLLM's qwen3_coder parser does (a parameter the
schema does not describe stays a string); a value that is not of its declared type makes the call malformed.

`tool_choice` ("required" / named) pre-writes the start of a call and the model continues it under
call_grammar (xml_grammar.py): an offered name, the tool's parameters by its schema (raw strings, typed values
as JSON), the closing tags, then only the end of the turn. Its arguments are built from the parameters,
not written by the model as one JSON text: a stream sends them converted as the parameters are written
(forced_call_so_far: a string value character by character, a typed value whole once its tag closes).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..contracts.chat import NamedToolChoice, ToolCall, ToolSpec
from .base import ParsedReply, Span, ToolFormat, checked_call, held_suffix, hold_from_marker, parse_wrapped
from .xml_grammar import xml_call_grammar

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_FUNCTION = re.compile(r"\s*<function=([^>\n]+)>(.*?)</function>\s*", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>\n]+)>(.*?)</parameter>", re.DOTALL)
_OPEN_PARAMETER = re.compile(r"<parameter=([^>\n]+)>\n")  # as call_grammar writes one
_CLOSE_PARAMETER = "\n</parameter>"


class Qwen3CoderFormat(ToolFormat):
    name = "qwen3_coder"

    def parse(self, text: str, tool_names: list[str], params: dict[str, Any] | None = None) -> ParsedReply:
        return parse_wrapped(text, OPEN, CLOSE, lambda inner: _call(inner, tool_names, params or {}), _content)

    def prefill(self, tool_choice: str | NamedToolChoice | None) -> str:
        # Each ends where the template's call has a token boundary: after `<function=` the name starts; after
        # the name's line the first `<parameter=` starts.
        if tool_choice == "required":
            return OPEN + "\n<function="
        if isinstance(tool_choice, NamedToolChoice):
            return OPEN + f"\n<function={tool_choice.function.name}>\n"
        return ""

    def hold_from(self, text: str) -> int:
        return hold_from_marker(text, OPEN)

    def call_grammar(self, tool_choice: str | NamedToolChoice | None, tools: list[ToolSpec]) -> str | None:
        return xml_call_grammar(tool_choice, tools, self.tokens)

    def forced_call_so_far(self, written: str, tool_choice: str | NamedToolChoice,
                           params: dict[str, Any]) -> tuple[str | None, str]:
        """The arguments JSON that parse() will build (json.dumps of the parameters in order), as far as the
        parameters written so far fix it. `written` follows the prefill and is laid out as call_grammar
        writes it: `NAME>\n` ("required"), then `<parameter=KEY>\nVALUE\n</parameter>\n` each, `</function>`."""
        if isinstance(tool_choice, NamedToolChoice):
            name, body = tool_choice.function.name, written
        else:
            end = written.find(">\n")
            if end == -1:
                return None, ""
            name, body = written[:end], written[end + 2:]
        schema = params.get(name)
        properties = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(properties, dict):
            properties = {}
        out, pos, first = "", 0, True
        while (m := _OPEN_PARAMETER.match(body, pos)) is not None:
            key = m.group(1).strip()
            before = out
            out += ("{" if first else ", ") + json.dumps(key, ensure_ascii=False) + ": "
            first = False
            close = body.find(_CLOSE_PARAMETER, m.end())
            if close == -1:  # the value is being written: a string's characters so far, a typed value not yet
                if _kind(properties.get(key)) not in (None, "string"):
                    return name, out
                raw = body[m.end():]
                raw = raw[:len(raw) - held_suffix(raw, _CLOSE_PARAMETER)]
                return name, out + json.dumps(raw, ensure_ascii=False)[:-1]
            value, error = _value(key, "\n" + body[m.end():close] + "\n", properties.get(key))
            if error:  # cannot happen under the grammar; the parsed reply decides
                return name, before
            out += json.dumps(value, ensure_ascii=False)
            pos = close + len(_CLOSE_PARAMETER)
            if not body.startswith("\n", pos):
                return name, out
            pos += 1
        if body.startswith("</function>", pos):
            return name, out + ("{}" if first else "}")
        return name, out


def _call(inner: str, tool_names: list[str], params: dict[str, Any]) -> tuple[ToolCall | None, str]:
    m = _FUNCTION.fullmatch(inner)
    if m is None:
        return None, "expected one <function=name>…</function> inside <tool_call>"
    name, body = m.group(1).strip(), m.group(2)
    schema = params.get(name)
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        properties = {}
    args: dict[str, Any] = {}
    pos = 0
    for p in _PARAMETER.finditer(body):
        if body[pos:p.start()].strip():
            return None, f"text outside <parameter=…>: {body[pos:p.start()].strip()[:40]!r}"
        key = p.group(1).strip()
        if key in args:
            return None, f"parameter '{key}' is given twice"
        value, error = _value(key, p.group(2), properties.get(key))
        if error:
            return None, error
        args[key] = value
        pos = p.end()
    if body[pos:].strip():
        return None, f"text outside <parameter=…>: {body[pos:].strip()[:40]!r}"
    return checked_call(name, args, tool_names)


def _content(inner: str) -> list[Span]:
    """A valid call's content inside its `<tool_call>` block: the function's name, each parameter's name and
    its value (less the template's newlines around it); the tags, `>` and the layout newlines are scaffolding."""
    m = _FUNCTION.fullmatch(inner)
    if m is None:
        return []
    out = [_stripped(inner, m.start(1), m.end(1))]
    body_at = m.start(2)
    for p in _PARAMETER.finditer(m.group(2)):
        out.append(_stripped(inner, body_at + p.start(1), body_at + p.end(1)))
        start, end = body_at + p.start(2), body_at + p.end(2)
        if inner.startswith("\n", start):
            start += 1
        if end > start and inner[end - 1] == "\n":
            end -= 1
        if end > start:
            out.append((start, end))
    return out


def _stripped(text: str, start: int, end: int) -> Span:
    piece = text[start:end]
    return start + len(piece) - len(piece.lstrip()), end - (len(piece) - len(piece.rstrip()))


def _value(key: str, raw: str, schema: Any) -> tuple[Any, str]:
    """A parameter's text (the template's newline after `>` and before `</parameter>` dropped) as its type."""
    if raw.startswith("\n"):
        raw = raw[1:]
    if raw.endswith("\n"):
        raw = raw[:-1]
    kind = _kind(schema)
    if kind is None or kind == "string":
        return raw, ""
    text = raw.strip()
    if text.lower() == "null":
        return None, ""
    if kind == "integer":
        try:
            return int(text), ""
        except ValueError:
            return None, f"parameter '{key}': {text[:40]!r} is not an integer"
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            return None, f"parameter '{key}': {text[:40]!r} is not a number"
        if not math.isfinite(number):
            return None, f"parameter '{key}': {text[:40]!r} is not a finite number"
        return (int(number) if number.is_integer() and not any(c in text for c in ".eE") else number), ""
    if kind == "boolean":
        if text.lower() in ("true", "false"):  # jinja's `| string` writes Python's True / False
            return text.lower() == "true", ""
        return None, f"parameter '{key}': {text[:40]!r} is not a boolean"
    try:
        return json.loads(text), ""
    except ValueError:
        return None, f"parameter '{key}': {text[:40]!r} is not JSON (its type is {kind})"


def _kind(schema: Any) -> str | None:
    """The type a parameter's value is read as: its schema's `type`, the first that is not "null" of a list."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(kind, list):  # ["integer", "null"]: the first non-null type
        kind = next((k for k in kind if k != "null"), None)
    return kind if isinstance(kind, str) else None
