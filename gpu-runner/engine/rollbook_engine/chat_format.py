"""Chat template rendering and tool-call parsing, shared by every backend.

Tools use the Hermes / Qwen convention: the model writes `<tool_call>{"name": ..., "arguments": {...}}
</tool_call>`. When the model's template handles tools itself (it mentions `tools`), it gets them as is;
otherwise (SmolLM2) the tool list is described in the system message and earlier assistant tool calls are
written back into their content in the same tag form, so the model sees what it produced.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from .contracts.chat import ChatMessage, ToolCall, ToolCallFunction, ToolSpec

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def _template_handles_tools(tokenizer) -> bool:
    return "tools" in (getattr(tokenizer, "chat_template", None) or "")


def _tools_system_text(tools: list[ToolSpec]) -> str:
    specs = "\n".join(json.dumps(t.model_dump(exclude_none=True)) for t in tools)
    return (
        "You may call functions. Available tools:\n<tools>\n" + specs + "\n</tools>\n"
        'To call one, reply with <tool_call>{"name": <name>, "arguments": <object>}</tool_call>.'
    )


def to_template_messages(messages: list[ChatMessage], tools: list[ToolSpec] | None, native_tools: bool) -> list[dict]:
    out: list[dict[str, Any]] = []
    for m in messages:
        d: dict[str, Any] = {"role": m.role, "content": m.content or ""}
        if m.name is not None:
            d["name"] = m.name
        if m.tool_call_id is not None:
            d["tool_call_id"] = m.tool_call_id
        if m.tool_calls:
            if native_tools:
                d["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.function.name, "arguments": _json_or_str(c.function.arguments)}}
                    for c in m.tool_calls
                ]
            else:
                calls = "".join(
                    "<tool_call>" + json.dumps({"name": c.function.name, "arguments": _json_or_str(c.function.arguments)})
                    + "</tool_call>"
                    for c in m.tool_calls
                )
                d["content"] = (d["content"] + ("\n" if d["content"] else "") + calls)
        out.append(d)
    if tools and not native_tools:
        text = _tools_system_text(tools)
        if out and out[0]["role"] == "system":
            out[0]["content"] = out[0]["content"] + "\n\n" + text
        else:
            out.insert(0, {"role": "system", "content": text})
    return out


def render_prompt(tokenizer, messages: list[ChatMessage], tools: list[ToolSpec] | None) -> list[int]:
    """Token ids of the chat-templated prompt with the generation prompt appended."""
    native = _template_handles_tools(tokenizer)
    kwargs: dict[str, Any] = {}
    if tools and native:
        kwargs["tools"] = [t.model_dump(exclude_none=True) for t in tools]
    ids = tokenizer.apply_chat_template(
        to_template_messages(messages, tools, native), add_generation_prompt=True, tokenize=True,
        return_dict=False, **kwargs,
    )
    return list(ids)


def parse_tool_calls(text: str) -> tuple[str, list[ToolCall]]:
    """Split `<tool_call>` blocks out of the generated text. Malformed blocks stay in the text."""
    calls: list[ToolCall] = []

    def take(match: re.Match) -> str:
        try:
            obj = json.loads(match.group(1))
            name, args = obj["name"], obj.get("arguments", {})
        except (ValueError, KeyError, TypeError):
            return match.group(0)
        if not isinstance(name, str):
            return match.group(0)
        arguments = args if isinstance(args, str) else json.dumps(args)
        calls.append(ToolCall(id=f"call_{uuid.uuid4().hex[:24]}", function=ToolCallFunction(name=name, arguments=arguments)))
        return ""

    rest = _TOOL_CALL.sub(take, text)
    return (rest.strip() if calls else text), calls


def _json_or_str(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments
