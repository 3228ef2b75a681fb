"""The Hermes / Qwen2.5 / Qwen3 tool format: JSON calls inside `<tool_call>` tags. It is also how tools reach a
model whose chat template has no tool support (SmolLM2), rendered into whatever template the model has.

Rendering (into whatever template the model has, e.g. chatml), as Qwen2.5's own template writes it:
- a system section listing the tools as JSON lines inside `<tools></tools>`, with the instruction to answer
  `<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`;
- earlier assistant tool calls written back into the assistant's content in that tag form;
- tool results (role "tool") as one user turn wrapping each result in `<tool_response>\\n…\\n</tool_response>`,
  consecutive tool messages merged into one turn.

Parsing: every `<tool_call>` block in the reply becomes an OpenAI tool call (id `call_…`, arguments as a JSON
text) and leaves the content, or, when it is malformed (bad JSON, no name, arguments not an object, a tool that
was not offered, a tag never closed), stays in the content and is reported with the reason. Hand-written
because no maintained Python library parses this format on its own (vLLM's Hermes parser lives inside vLLM).

`tool_choice` is enforced by prefilling the reply: "required" → `<tool_call>\\n{"name": "`, a named function →
through `"arguments":`. The prefill is prompt; the model continues it under call_grammar (constrained.py): an
offered name, arguments matching its schema, `}\\n</tool_call>`, then only end of sequence. Each prefill ends where the
canonical tokenisation of a call has a token boundary, so the model continues from a split it has seen.
"""

from __future__ import annotations

import json
from typing import Any

from ..contracts.chat import ChatMessage, NamedToolChoice, ToolCall, ToolSpec
from .grammar import json_call_grammar
from .base import (
    ParsedReply, ToolFormat, checked_call, hold_from_marker, json_call_content, json_or_text, parse_wrapped, raw_arguments,
)

OPEN, CLOSE = "<tool_call>", "</tool_call>"


def tools_system_text(tools: list[ToolSpec]) -> str:
    lines = "\n".join(json.dumps(t.model_dump(), ensure_ascii=False) for t in tools)
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" + lines + "\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )


def call_block(name: str, arguments: Any) -> str:
    return f'{OPEN}\n{{"name": {json.dumps(name, ensure_ascii=False)}, "arguments": ' \
           f"{json.dumps(arguments, ensure_ascii=False)}}}\n{CLOSE}"


def template_messages(messages: list[ChatMessage], tools: list[ToolSpec] | None) -> list[dict[str, Any]]:
    """OpenAI messages → plain role/content messages any template renders, in the Hermes form above."""
    out: list[dict[str, Any]] = []
    merging_tools = False
    for m in messages:
        if m.role == "tool":
            block = "<tool_response>\n" + (m.content or "") + "\n</tool_response>"
            if merging_tools:
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block})
            merging_tools = True
            continue
        merging_tools = False
        content = m.content or ""
        if m.role == "assistant" and m.tool_calls:
            blocks = [call_block(c.function.name, json_or_text(c.function.arguments)) for c in m.tool_calls]
            content = "\n".join(([content] if content else []) + blocks)
        d: dict[str, Any] = {"role": m.role, "content": content}
        if m.name is not None:
            d["name"] = m.name
        out.append(d)
    if tools:
        section = tools_system_text(tools)
        if out and out[0]["role"] == "system":
            out[0]["content"] = (out[0]["content"] + "\n\n" if out[0]["content"] else "") + section
        else:
            out.insert(0, {"role": "system", "content": section})
    return out


def prefill(tool_choice: str | NamedToolChoice | None) -> str:
    """Text the reply starts with so the model must call a tool (tool_choice), or ""."""
    if tool_choice == "required":
        return OPEN + '\n{"name": "'
    if isinstance(tool_choice, NamedToolChoice):
        # No space after the colon: the template writes `": {"` as the tokens `":` + ` {"`, so a prefill ending
        # in a space would make the model start from a split it never saw (and it then writes garbage).
        return OPEN + '\n{"name": ' + json.dumps(tool_choice.function.name, ensure_ascii=False) + ', "arguments":'
    return ""


def parse(text: str, tool_names: list[str]) -> ParsedReply:
    """Split the `<tool_call>` blocks out of a reply. Content keeps everything that is not a valid call, with
    trailing whitespace dropped when calls were taken out (null when nothing else remains)."""
    return parse_wrapped(text, OPEN, CLOSE, lambda inner: _call_from_json(inner, tool_names),
                         lambda inner: json_call_content(inner, len(inner) - len(inner.lstrip()), ("arguments",)))


def _call_from_json(inner: str, tool_names: list[str]) -> tuple[ToolCall | None, str]:
    try:
        obj = json.loads(inner)
    except ValueError as err:
        return None, f"invalid JSON: {err}"
    if not isinstance(obj, dict):
        return None, "not a JSON object"
    args = obj.get("arguments", {})
    return checked_call(obj.get("name"), args, tool_names, raw=raw_arguments(inner, "arguments", args))


class HermesFormat(ToolFormat):
    name = "hermes"
    call_close = "}\n" + CLOSE

    def parse(self, text: str, tool_names: list[str], params: dict[str, Any] | None = None) -> ParsedReply:
        return parse(text, tool_names)

    def prefill(self, tool_choice: str | NamedToolChoice | None) -> str:
        return prefill(tool_choice)

    def hold_from(self, text: str) -> int:
        return hold_from_marker(text, OPEN)

    def call_grammar(self, tool_choice: str | NamedToolChoice | None, tools: list[ToolSpec]) -> str | None:
        return json_call_grammar(tool_choice, tools, self.args_key, self.call_close, self.tokens)
