"""The Lark grammar (llguidance's dialect, constrained.py) of the rest of a forced qwen3_coder call after its
prefill: `<tool_call>\\n<function=` ("required") or `<tool_call>\\n<function=NAME>\\n` (named).

A call is spelled as the Qwen3-Coder template writes one, and its values as vLLM's qwen3_coder parser (and
qwen3_coder.py, which reads the same way) turns them back into the tool's arguments:

    NAME>\\n                                  ("required": one of the offered names)
    <parameter=KEY>\\nVALUE\\n</parameter>\\n   (one per parameter, in the schema's `properties` order:
                                              every required one, each optional one or not)
    </function>\\n</tool_call>

Only names from the schema's `properties` are written (no others, whatever additionalProperties says). A
VALUE by the parameter's schema `type` (the first that is not "null", as the parsers read it):
- string, or no type: raw text, as the template writes a string (no quotes, no escapes). It never holds a
  tag the parsers split on (`<parameter=`, `</parameter>`, `<function=`, `</function>`, `<tool_call>`,
  `</tool_call>`) nor is "null" in any case (vLLM reads that as None); `enum` / `const` as those strings,
  `minLength` / `maxLength` as character counts, `pattern` as a regex the text contains (anchors honoured).
  Other string keywords (`format`, ...) are not enforced. A schema with no type (`anyOf` and the like) is
  read back as a string by both parsers, so its value is raw text too.
- integer, number, object, array: JSON matching that subschema (`%json`, with the separators the template's
  `tojson` writes); a type list with "null" also allows `null`.
- boolean: `true` / `false` as JSON, or `True` / `False` as the template's `| string` writes Python's.
Then only the end of the turn (constrained.py). The schema's `$defs` / `definitions` travel with each JSON
subschema, so a `$ref` inside one resolves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..contracts.chat import NamedToolChoice, ToolSpec
from ..errors import RequestError
from .grammar import _JSON_STYLE, _lit, spelled

# What a raw string value must not contain: the tags vLLM's and this engine's parsers split a call on.
_TAGS = r"(?s:.*)(<\/?(parameter|function)[=>]|<\/?tool_call>)(?s:.*)"
_CLOSE_PARAM = "\n</parameter>"
_JSON_KINDS = {"integer", "number", "object", "array"}


def xml_call_grammar(tool_choice: str | NamedToolChoice | None, tools: list[ToolSpec],
                     tokens: Mapping[str, int]) -> str | None:
    """The grammar after Qwen3CoderFormat.prefill(tool_choice), or None when tool_choice forces no call.
    A tool name or a required parameter name the tags cannot hold (`>` or a newline in it) is the request's
    error (400 naming `tools`): no call to it can be written in this format."""
    by_name = {t.function.name: t for t in tools}
    if tool_choice == "required":
        names = [n for n in by_name if _writable(n)]
        if not names:
            raise RequestError("invalid request: tools: no tool name can be written in this model's "
                               "<function=NAME> calls ('>' or a newline in every name)", "tools")
    elif isinstance(tool_choice, NamedToolChoice) and tool_choice.function.name in by_name:
        names = [tool_choice.function.name]
        if not _writable(names[0]):
            raise RequestError(f"invalid request: tools: {names[0]!r} cannot be written in this model's "
                               "<function=NAME> calls ('>' or a newline in it)", "tools")
    else:
        return None
    rules: list[str] = []
    bodies = [_parameters(i, by_name[name].function.parameters or {}, rules) for i, name in enumerate(names)]
    close = spelled("</function>\n</tool_call>", tokens)
    if tool_choice == "required":
        head = " | ".join(f"{_lit(name + '>' + chr(10))} {body}".strip() for name, body in zip(names, bodies))
        start = f"start: ({head}) {close}"
    else:
        start = f"start: {bodies[0]} {close}".replace("  ", " ")
    return "\n".join([start, *rules])


def _writable(name: str) -> bool:
    return bool(name) and ">" not in name and "\n" not in name


def _parameters(i: int, schema: dict[str, Any], rules: list[str]) -> str:
    """The rule sequence of tool i's parameters (rules appended to `rules`), "" when it has none."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return ""
    required = set(schema.get("required") or [])
    defs: dict[str, Any] = {k: schema[k] for k in ("$defs", "definitions") if k in schema}
    parts = []
    for j, (key, sub) in enumerate(properties.items()):
        if not _writable(key):
            if key in required:
                raise RequestError(f"invalid request: tools: parameter {key!r} cannot be written in this model's "
                                   "<parameter=NAME> tags ('>' or a newline in its name)", "tools")
            continue
        rule = f"p{i}_{j}"
        rules.append(f"{rule}: {_lit('<parameter=' + key + '>' + chr(10))} {_value(rule, sub, defs, rules)} "
                     f"{_lit(chr(10))}")
        parts.append(rule if key in required else f"{rule}?")
    return " ".join(parts)


def _value(rule: str, schema: Any, defs: dict[str, Any], rules: list[str]) -> str:
    """The Lark of one parameter's VALUE followed by `\\n</parameter>` (the template's newline before the tag)."""
    if not isinstance(schema, dict):
        schema = {}
    kind = schema.get("type")
    nullable = False
    if isinstance(kind, list):
        nullable = "null" in kind
        kind = next((k for k in kind if k != "null"), None)
    close = _lit(_CLOSE_PARAM)
    if kind == "boolean":
        null = ' | "null"' if nullable else ""
        return f'("true" | "false" | "True" | "False"{null}) {close}'
    if kind in _JSON_KINDS:
        sub = {**schema, "type": kind, **defs, "x-guidance": _JSON_STYLE}
        rules.append(f"{rule}_json: %json{json.dumps(sub)}")
        return f'("null" | {rule}_json) {close}' if nullable else f"{rule}_json {close}"
    # A string, or a value the parsers read as one.
    choices = schema["enum"] if "enum" in schema else [schema["const"]] if "const" in schema else None
    if choices is not None:
        texts = [c for c in choices if isinstance(c, str) and not re.fullmatch(_TAGS, c) and c.lower() != "null"]
        if not texts:
            raise RequestError(f"invalid request: tools: no value of the enum {choices!r} is a string this "
                               "model's <parameter> tags can hold", "tools")
        return f"({' | '.join(_lit(t) for t in texts)}) {close}"
    terminal = rule.upper() + "_TEXT"
    rules.append(f"{terminal}: {_text(schema)} {close}")
    return terminal


def _text(schema: dict[str, Any]) -> str:
    """The terminal of a raw string value (before its closing tag)."""
    low, high = schema.get("minLength"), schema.get("maxLength")
    length = f"{{{int(low) if isinstance(low, int) else 0},{int(high) if isinstance(high, int) else ''}}}"
    parts = [f"/(?s:.{length})/", f"~/{_TAGS}/", "~/(?i:null)/"]
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and pattern:
        # JSON Schema patterns match anywhere in the string unless anchored.
        core, before, after = pattern, "(?s:.*)", "(?s:.*)"
        if core.startswith("^"):
            core, before = core[1:], ""
        if core.endswith("$") and not core.endswith("\\$"):
            core, after = core[:-1], ""
        parts.append("/" + before + "(?:" + re.sub(r"(?<!\\)/", r"\/", core) + ")" + after + "/")
    return "(" + " & ".join(parts) + ")"
