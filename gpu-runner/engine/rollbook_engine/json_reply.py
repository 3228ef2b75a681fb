"""`response_format` as a grammar: the Lark text (llguidance's dialect, constrained.py) a reply in JSON mode is
decoded under, so every sampled token keeps the reply a prefix of valid JSON and a finished reply parses.

json_object: any JSON object; json_schema: a JSON value matching the schema (`strict` or not: the constraint
is the same, as vLLM's guided decoding does; an absent schema is any object). The JSON is written without
optional whitespace (the separators json.dumps writes): with flexible whitespace a small model can fill its
whole budget with newlines, which no parser then reads. The caller's own "x-guidance" options are dropped:
they are llguidance's compiler switches (lenient schemas, flexible whitespace), not part of a schema.
"""

from __future__ import annotations

import json
from typing import Any

from .contracts.chat import JsonObjectFormat, JsonSchemaFormat, ResponseFormat

_STYLE = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


def json_reply_grammar(fmt: ResponseFormat | None) -> str | None:
    """The grammar of the whole reply for a JSON response_format; None for text (or no format)."""
    if isinstance(fmt, JsonObjectFormat):
        schema: dict[str, Any] = {"type": "object"}
    elif isinstance(fmt, JsonSchemaFormat):
        schema = dict(fmt.json_schema.schema_ or {"type": "object"})
    else:
        return None
    schema.pop("x-guidance", None)
    schema["x-guidance"] = _STYLE
    return f"start: %json{json.dumps(schema)}"
