"""The Lark grammar (llguidance's dialect, see constrained.py) of the rest of a forced tool call after a
format's prefill.

The grammar describes the bytes AFTER the prefill (which is prompt): for "required" the tool name is one of
the offered names, then the format's text up to the arguments, a JSON object matching that tool's `parameters`
schema (`%json{...}`), and the format's closing text; for a named function only the arguments and the closing
text. The JSON is written with the separators templates use (`", "` and `": "`, no other whitespace), the
spelling the model saw in its prompt. (qwen3_coder's XML calls: xml_grammar.py.)

Scaffolding that holds a marker the tokenizer keeps as ONE added token (Qwen's `</tool_call>`, Mistral's
`[ARGS]`) is written as that token (`<[id]>`, see `spelled`): llguidance matches literal text with ordinary
tokens only (every added token, special or not, is a token of its own to it), so a text literal would force
the model to spell the marker in byte pieces it never saw, which re-tokenising the turn would not give back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..contracts.chat import NamedToolChoice, ToolSpec

# llguidance's JSON compiler options, as the schema's "x-guidance" key: the separators json.dumps and the
# chat templates write, and no other whitespace, so the constrained call reads like the calls in the prompt.
_JSON_STYLE = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


def _lit(text: str) -> str:
    """A Lark string literal (llguidance reads JSON-style escapes)."""
    return json.dumps(text, ensure_ascii=False)


def spelled(text: str, tokens: Mapping[str, int]) -> str:
    """Lark for the literal `text`, each occurrence of an added token's text in it (`tokens`: text → id, see
    ToolFormat.tokens) as that token, `<[id]>`; the rest as string literals. "" for an empty text."""
    if not text:
        return ""
    found = [t for t in tokens if t and t in text]
    if not found:
        return _lit(text)
    pattern = re.compile("|".join(re.escape(t) for t in sorted(found, key=len, reverse=True)))
    parts: list[str] = []
    pos = 0
    for m in pattern.finditer(text):
        if m.start() > pos:
            parts.append(_lit(text[pos:m.start()]))
        parts.append(f"<[{tokens[m.group()]}]>")
        pos = m.end()
    if pos < len(text):
        parts.append(_lit(text[pos:]))
    return " ".join(parts)


def arguments_schema(parameters: dict[str, Any] | None) -> dict[str, Any]:
    """A tool's `parameters` as the schema its arguments are decoded under: always an object (OpenAI's
    arguments are one, and the parsers refuse anything else), in the templates' JSON spelling."""
    schema = dict(parameters or {})
    schema.setdefault("type", "object")
    schema["x-guidance"] = {**_JSON_STYLE, **(schema.get("x-guidance") or {})}
    return schema


def forced_tools(tool_choice: str | NamedToolChoice | None, tools: list[ToolSpec]) -> dict[str, ToolSpec] | None:
    """The tools a forced call may name, by name in the offered order: all of them ("required"), the named one
    (when offered), or None when tool_choice forces no call."""
    by_name = {t.function.name: t for t in tools}
    if tool_choice == "required":
        return by_name
    if isinstance(tool_choice, NamedToolChoice) and tool_choice.function.name in by_name:
        return {tool_choice.function.name: by_name[tool_choice.function.name]}
    return None


def json_args_rules(forced: Mapping[str, ToolSpec]) -> list[str]:
    """One `args_<i>` rule per forced tool: its arguments as JSON matching its parameters' schema."""
    return [f"args_{i}: %json{json.dumps(arguments_schema(t.function.parameters))}" for i, t in enumerate(forced.values())]


def json_call_grammar(tool_choice: str | NamedToolChoice | None, tools: list[ToolSpec], args_key: str,
                      close: str, tokens: Mapping[str, int] | None = None) -> str | None:
    """The Lark grammar of a JSON-style call after its prefill (hermes, llama3_json and mistral spell a call
    `{"name": "<name>", "<args_key>": {...}` + `close`); their prefills end after `"name": "` ("required") or
    after `"<args_key>":` (named). None when tool_choice does not force a call."""
    forced = forced_tools(tool_choice, tools)
    if forced is None:
        return None
    names = list(forced)
    rules = json_args_rules(forced)
    if tool_choice == "required":
        head = " | ".join(f"{_lit(json.dumps(n, ensure_ascii=False)[1:] + ', ' + json.dumps(args_key) + ': ')} args_{i}"
                          for i, n in enumerate(names))
        start = f"start: ({head}) {spelled(close, tokens or {})}"
    else:
        start = f'start: " " args_0 {spelled(close, tokens or {})}'
    return "\n".join([start, *rules])
