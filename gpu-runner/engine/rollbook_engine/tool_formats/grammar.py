"""The Lark grammar (llguidance's dialect, see constrained.py) of the rest of a forced tool call after a
format's prefill.

The grammar describes the bytes AFTER the prefill (which is prompt): for "required" the tool name is one of
the offered names, then the format's text up to the arguments, a JSON object matching that tool's `parameters`
schema (`%json{...}`), and the format's closing text; for a named function only the arguments and the closing
text. The JSON is written with the separators templates use (`", "` and `": "`, no other whitespace), the
spelling the model saw in its prompt.
"""

from __future__ import annotations

import json
from typing import Any

from ..contracts.chat import NamedToolChoice, ToolSpec

# llguidance's JSON compiler options, as the schema's "x-guidance" key: the separators json.dumps and the
# chat templates write, and no other whitespace, so the constrained call reads like the calls in the prompt.
_JSON_STYLE = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


def _lit(text: str) -> str:
    """A Lark string literal (llguidance reads JSON-style escapes)."""
    return json.dumps(text, ensure_ascii=False)


def arguments_schema(parameters: dict[str, Any] | None) -> dict[str, Any]:
    """A tool's `parameters` as the schema its arguments are decoded under: always an object (OpenAI's
    arguments are one, and the parsers refuse anything else), in the templates' JSON spelling."""
    schema = dict(parameters or {})
    schema.setdefault("type", "object")
    schema["x-guidance"] = {**_JSON_STYLE, **(schema.get("x-guidance") or {})}
    return schema


def json_call_grammar(tool_choice: str | NamedToolChoice | None, tools: list[ToolSpec], args_key: str,
                      close: str) -> str | None:
    """The Lark grammar of a JSON-style call after its prefill (hermes, llama3_json and mistral spell a call
    `{"name": "<name>", "<args_key>": {...}` + `close`); their prefills end after `"name": "` ("required") or
    after `"<args_key>":` (named). None when tool_choice does not force a call."""
    by_name = {t.function.name: t for t in tools}
    if tool_choice == "required":
        names = list(by_name)
    elif isinstance(tool_choice, NamedToolChoice) and tool_choice.function.name in by_name:
        names = [tool_choice.function.name]
    else:
        return None
    rules = []
    for i, name in enumerate(names):
        rules.append(f"args_{i}: %json{json.dumps(arguments_schema(by_name[name].function.parameters))}")
    if tool_choice == "required":
        head = " | ".join(f"{_lit(json.dumps(n, ensure_ascii=False)[1:] + ', ' + json.dumps(args_key) + ': ')} args_{i}"
                          for i, n in enumerate(names))
        start = f"start: ({head}) {_lit(close)}"
    else:
        start = f'start: " " args_0 {_lit(close)}'
    return "\n".join([start, *rules])
