"""Chat template rendering: OpenAI messages → the text the model is fed, shared by every backend.

When the model's template handles tools itself (it mentions `tools`), it gets OpenAI-shaped messages (tool
call arguments as objects, as Hugging Face templates expect) and `tools=`, and writes them in its family's
spelling (tool_formats/ reads that spelling back); otherwise (SmolLM2) tools, earlier tool calls and tool
results are written in the Hermes / Qwen2.5 form of tool_formats/hermes.py, into whatever template the model
has. Rendering stops at text: prompt.py bounds its length before anything is tokenised.
"""

from __future__ import annotations

from typing import Any

from .tool_formats import hermes, template_text
from .tool_formats.base import json_or_text
from .contracts.chat import ChatMessage, ToolSpec
from .errors import RequestError


def template_handles_tools(tokenizer) -> bool:
    return "tools" in template_text(tokenizer)


def _native_messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        d: dict[str, Any] = {"role": m.role, "content": m.content or ""}
        if m.name is not None:
            d["name"] = m.name
        if m.tool_call_id is not None:
            d["tool_call_id"] = m.tool_call_id
        if m.tool_calls:
            d["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.function.name, "arguments": json_or_text(c.function.arguments)}}
                for c in m.tool_calls
            ]
        out.append(d)
    return out


def render(tokenizer, messages: list[ChatMessage], tools: list[ToolSpec] | None, *, generation_prompt: bool) -> str:
    """The chat-templated text of `messages` (`tools`: the tools shown to the model, None for none)."""
    kwargs: dict[str, Any] = {}
    if template_handles_tools(tokenizer):
        template_msgs = _native_messages(messages)
        if tools:
            kwargs["tools"] = [t.model_dump() for t in tools]
    else:
        template_msgs = hermes.template_messages(messages, tools)
    try:
        return tokenizer.apply_chat_template(
            template_msgs, add_generation_prompt=generation_prompt, tokenize=False, **kwargs)
    except Exception as err:  # template errors (jinja raise_exception) are the caller's input
        raise RequestError(f"invalid request: messages: chat template failed: {err}", "messages") from err
