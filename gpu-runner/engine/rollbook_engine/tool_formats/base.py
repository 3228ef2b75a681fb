"""What every tool-call format shares: the parsed reply, the checks a call must pass whatever its spelling,
and the format's interface (parse, tool_choice prefill, where a streamed reply must be held).

A format does not render a model's own tool template: when the chat template handles tools (chat_format.py),
the template writes the tools, the earlier calls and the results; the format reads what the model wrote in
that spelling and pre-writes the start of a call for tool_choice. Only Hermes can also render into a
template without tool support (SmolLM2)."""

from __future__ import annotations

import json
import re
import secrets
import string
from dataclasses import dataclass, field
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Literal

from ..contracts.chat import MalformedToolCall, NamedToolChoice, ToolCall, ToolCallFunction, ToolSpec


@dataclass
class ParsedReply:
    content: str | None
    calls: list[ToolCall] = field(default_factory=list)
    malformed: list[MalformedToolCall] = field(default_factory=list)


def openai_call_id() -> str:
    return f"call_{secrets.token_hex(12)}"


def checked_call(name: Any, args: Any, tool_names: list[str], call_id: str | None = None,
                 raw: str | None = None) -> tuple[ToolCall | None, str]:
    """(an OpenAI tool call, "") or (None, why not): a name that was offered, arguments that are an object.
    `raw`: the arguments as the model spelled them (raw_arguments), kept as the call's arguments text, as
    OpenAI returns what the model wrote and so a stream's argument fragments add up to it; else json.dumps."""
    if not isinstance(name, str) or not name:
        return None, 'no function "name"'
    if tool_names and name not in tool_names:
        return None, f"unknown tool '{name}' (offered: {', '.join(tool_names)})"
    if not isinstance(args, dict):
        return None, f'"arguments" must be a JSON object, not {type(args).__name__}'
    return ToolCall(id=call_id or openai_call_id(),
                    function=ToolCallFunction(name=name, arguments=raw if raw is not None else
                                              json.dumps(args, ensure_ascii=False))), ""


_DECODER = json.JSONDecoder()


def raw_arguments(text: str, key: str, args: Any) -> str | None:
    """The text of the first `"<key>": <value>` in `text` whose value is `args` (a parsed call's arguments):
    what the model wrote, e.g. `1e3` or `"\\u00e9"` where json.dumps would write `1000.0` or `"é"`. None when
    `args` is not an object or no such spelling is found."""
    if not isinstance(args, dict):
        return None
    for m in re.finditer(r'"' + re.escape(key) + r'"\s*:\s*', text):
        try:
            value, end = _DECODER.raw_decode(text, m.end())
        except ValueError:
            continue
        if value == args:
            return text[m.end():end]
    return None


def parse_wrapped(text: str, open_tag: str, close_tag: str,
                  read_call: Callable[[str], tuple[ToolCall | None, str]]) -> ParsedReply:
    """Split the `open_tag … close_tag` blocks out of a reply (the formats that wrap each call, hermes and
    qwen3_coder), reading each block's inside with `read_call`. Content keeps everything that is not a valid
    call; a block never closed, or one `read_call` refuses, stays in the content and is reported malformed."""
    kept: list[str] = []
    calls: list[ToolCall] = []
    malformed: list[MalformedToolCall] = []
    pos = 0
    while (start := text.find(open_tag, pos)) != -1:
        kept.append(text[pos:start])
        end = text.find(close_tag, start + len(open_tag))
        if end == -1:
            kept.append(text[start:])
            malformed.append(MalformedToolCall(text=text[start:], error=f"{open_tag} is never closed by {close_tag}"))
            pos = len(text)
            break
        block = text[start:end + len(close_tag)]
        call, error = read_call(text[start + len(open_tag):end])
        if call is None:
            kept.append(block)
            malformed.append(MalformedToolCall(text=block, error=error))
        else:
            calls.append(call)
        pos = end + len(close_tag)
    kept.append(text[pos:])
    return finish(kept, calls, malformed)


def finish(kept: list[str], calls: list[ToolCall], malformed: list[MalformedToolCall]) -> ParsedReply:
    """Content is everything that was not a valid call; with calls taken out its trailing whitespace goes and an
    empty content is null (OpenAI's shape for a reply that is only calls)."""
    content = "".join(kept)
    if calls:
        content = content.rstrip()
        return ParsedReply(content or None, calls, malformed)
    return ParsedReply(content, calls, malformed)


def hold_from_marker(text: str, marker: str) -> int:
    """Where a streamed reply must be held for a call opened by `marker`: at the marker, or at a suffix that
    could still become it, else nowhere (len(text))."""
    at = text.find(marker)
    if at != -1:
        return at
    return next((len(text) - j for j in range(len(marker) - 1, 0, -1) if text.endswith(marker[:j])), len(text))


def alnum_id(length: int) -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(length))


FormatName = Literal["hermes", "qwen3_coder", "llama3_json", "mistral"]


class ToolFormat:
    """One family's spelling of tool calls. `name` is what /health reports (EngineHealth.tool_format)."""

    name: FormatName = "hermes"
    # For the formats whose forced call is constrained (call_grammar): after the prefill a call is spelled
    # `<name>", "<args_key>": <arguments><call_close>` ("required"; a named prefill ends after `"<args_key>":`
    # and the rest is ` <arguments><call_close>`), which streaming.py reads to stream the arguments as they come.
    args_key: str = "arguments"
    call_close: str | None = None
    # The tokenizer's added tokens, text → id (for_tokenizer sets them): a call_grammar writes a marker that is
    # one of them as that token (grammar.spelled). Empty: every marker is plain text.
    tokens: Mapping[str, int] = MappingProxyType({})

    def parse(self, text: str, tool_names: list[str], params: dict[str, Any] | None = None) -> ParsedReply:
        """Calls out of a reply (`params`: each offered tool's parameters schema, for formats whose values are
        untyped text). Anything that is not a valid call stays in the content; malformed calls say why."""
        raise NotImplementedError

    def prefill(self, tool_choice: str | NamedToolChoice | None) -> str:
        """Text the reply starts with so that the model must call a tool (tool_choice), or ""."""
        raise NotImplementedError

    def hold_from(self, text: str) -> int:
        """The index from which a streamed reply may still turn out to be a call (len(text): nothing to hold)."""
        raise NotImplementedError

    def call_grammar(self, tool_choice: str | NamedToolChoice | None, tools: list[ToolSpec]) -> str | None:
        """The Lark grammar (tool_formats/grammar.py) of the rest of a forced call after prefill(tool_choice),
        or None: the model continues the prefill unconstrained (a format that does not write one)."""
        return None


def json_or_text(arguments: str) -> Any:
    """A call's arguments as the object templates expect (OpenAI sends them as a JSON text)."""
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments
