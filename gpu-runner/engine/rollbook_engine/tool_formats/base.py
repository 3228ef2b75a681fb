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


Span = tuple[int, int]  # [start, end) character offsets in the text a format parsed


@dataclass
class CallSpan:
    """Where one parsed call is in the reply's text: `whole` is all of it, the format's markers and the call
    envelope included (scaffolding); `content` are the parts that are the call itself — its name and its
    arguments (or, for qwen3_coder, each parameter's name and value) as docs/sdk.md's table says."""

    whole: Span
    content: list[Span] = field(default_factory=list)


@dataclass
class ParsedReply:
    content: str | None
    calls: list[ToolCall] = field(default_factory=list)
    malformed: list[MalformedToolCall] = field(default_factory=list)
    spans: list[CallSpan] = field(default_factory=list)  # one per valid call, offsets in the parsed text


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


def object_members(text: str, pos: int) -> dict[str, Span] | None:
    """The top-level members of the JSON object starting at text[pos] (`{`): each key's value span, so a
    call's name and arguments are found in the envelope itself, never inside the arguments. None when the
    text there is not an object that closes."""
    spans: dict[str, Span] = {}
    if not text.startswith("{", pos):
        return None
    at = _skip_ws(text, pos + 1)
    if text.startswith("}", at):
        return spans
    while True:
        try:
            key, at = _DECODER.raw_decode(text, at)
            at = _skip_ws(text, at)
            if not text.startswith(":", at) or not isinstance(key, str):
                return None
            start = _skip_ws(text, at + 1)
            _, at = _DECODER.raw_decode(text, start)
        except ValueError:
            return None
        spans.setdefault(key, (start, at))
        at = _skip_ws(text, at)
        if text.startswith("}", at):
            return spans
        if not text.startswith(",", at):
            return None
        at = _skip_ws(text, at + 1)


def array_items(text: str, pos: int) -> list[Span] | None:
    """Each item's span in the JSON array starting at text[pos] (`[`), or None when it is not one."""
    if not text.startswith("[", pos):
        return None
    spans: list[Span] = []
    at = _skip_ws(text, pos + 1)
    if text.startswith("]", at):
        return spans
    while True:
        try:
            _, end = _DECODER.raw_decode(text, at)
        except ValueError:
            return None
        spans.append((at, end))
        at = _skip_ws(text, end)
        if text.startswith("]", at):
            return spans
        if not text.startswith(",", at):
            return None
        at = _skip_ws(text, at + 1)


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\n\r":
        pos += 1
    return pos


def json_call_content(text: str, pos: int, args_keys: tuple[str, ...]) -> list[Span]:
    """The content of a JSON call `{"name": "<name>", "<args key>": {…}}` starting at text[pos]: the name
    inside its quotes and the arguments object whole; the keys, quotes, colons, commas and braces of the
    envelope are scaffolding."""
    members = object_members(text, pos) or {}
    out: list[Span] = []
    if (name := members.get("name")) is not None and name[1] - name[0] >= 2:
        out.append((name[0] + 1, name[1] - 1))
    if (args := next((members[k] for k in args_keys if k in members), None)) is not None:
        out.append(args)
    return out


def shifted(spans: list[Span], by: int) -> list[Span]:
    return [(a + by, b + by) for a, b in spans]


def parse_wrapped(text: str, open_tag: str, close_tag: str,
                  read_call: Callable[[str], tuple[ToolCall | None, str]],
                  content_of: Callable[[str], list[Span]]) -> ParsedReply:
    """Split the `open_tag … close_tag` blocks out of a reply (the formats that wrap each call, hermes and
    qwen3_coder), reading each block's inside with `read_call` (and where its name and arguments are with
    `content_of`, offsets in the inside). Content keeps everything that is not a valid call; a block never
    closed, or one `read_call` refuses, stays in the content and is reported malformed."""
    kept: list[str] = []
    calls: list[ToolCall] = []
    malformed: list[MalformedToolCall] = []
    spans: list[CallSpan] = []
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
        inner_at = start + len(open_tag)
        call, error = read_call(text[inner_at:end])
        if call is None:
            kept.append(block)
            malformed.append(MalformedToolCall(text=block, error=error))
        else:
            calls.append(call)
            spans.append(CallSpan((start, end + len(close_tag)), shifted(content_of(text[inner_at:end]), inner_at)))
        pos = end + len(close_tag)
    kept.append(text[pos:])
    return finish(kept, calls, malformed, spans)


def finish(kept: list[str], calls: list[ToolCall], malformed: list[MalformedToolCall],
           spans: list[CallSpan] | None = None) -> ParsedReply:
    """Content is everything that was not a valid call; with calls taken out its trailing whitespace goes and an
    empty content is null (OpenAI's shape for a reply that is only calls)."""
    content = "".join(kept)
    if calls:
        content = content.rstrip()
        return ParsedReply(content or None, calls, malformed, spans or [])
    return ParsedReply(content, calls, malformed)


def hold_from_marker(text: str, marker: str) -> int:
    """Where a streamed reply must be held for a call opened by `marker`: at the marker, or at a suffix that
    could still become it, else nowhere (len(text))."""
    at = text.find(marker)
    if at != -1:
        return at
    return next((len(text) - j for j in range(len(marker) - 1, 0, -1) if text.endswith(marker[:j])), len(text))


def held_suffix(text: str, closing: str) -> int:
    """How many trailing characters of `text` could still be the start of `closing` (0: none)."""
    return next((j for j in range(min(len(closing), len(text)), 0, -1) if text.endswith(closing[:j])), 0)


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

    def forced_call_so_far(self, written: str, tool_choice: str | NamedToolChoice,
                           params: dict[str, Any]) -> tuple[str | None, str]:
        """A grammar-forced call being written (`written`: the reply after the prefill so far): (the called
        name once it is complete, the arguments text that can no longer change — a prefix of the parsed call's
        `function.arguments`). streaming.py sends the name and then these fragments as OpenAI streams a call.
        This default reads the JSON formats' spelling (args_key, call_close above); (None, "") where unknown."""
        if self.call_close is None:
            return None, ""
        if isinstance(tool_choice, NamedToolChoice):
            name: str | None = tool_choice.function.name
            if not written.startswith(" "):
                return None, ""
            args = written[1:]
        else:
            after_name = '", ' + json.dumps(self.args_key) + ": "
            at = written.find(after_name)
            if at == -1:
                return None, ""
            try:
                name = json.loads('"' + written[:at] + '"')
            except ValueError:
                return None, ""
            args = written[at + len(after_name):]
        return name, args[:len(args) - held_suffix(args, self.call_close)]


def json_or_text(arguments: str) -> Any:
    """A call's arguments as the object templates expect (OpenAI sends them as a JSON text)."""
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments
