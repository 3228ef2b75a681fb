"""Tool-call formats per model family, chosen from the model's chat template (never per run).

Detection reads the template text for what only that family's template writes:
- `[TOOL_CALLS]` → mistral: with `[ARGS]`, the per-call spelling of tokenizers v11 on (mistral_v11.py), else
  the JSON list of v3 to v7 (mistral.py);
- `<function=` or `<parameter=` → qwen3_coder, Qwen3-Coder / Qwen3.5's XML calls (qwen3_coder.py);
- `<|python_tag|>`, or `"parameters"` with the `ipython` role → llama3_json (llama3.py);
- anything else, `<tool_call>` (Qwen2.5, Qwen3, Hermes) and templates without tools (SmolLM2) → hermes
  (hermes.py), the engine's convention before formats were per family.
A template that does not mention tools at all renders tools in the Hermes text form (chat_format.py), so its
replies are read as Hermes whatever else it contains.

Each format also says where every call it parsed lies in the reply and which parts of it are the call's name
and arguments (ParsedReply.spans): token_roles.py marks the rest of the call, the format's scaffolding, token
by token for the token view.
"""

from __future__ import annotations

from typing import Any, get_args

from .base import FormatName, ParsedReply, ToolFormat
from .hermes import HermesFormat
from .llama3 import Llama3JsonFormat
from .mistral import MARK as MISTRAL_MARK
from .mistral import MistralFormat
from .mistral_v11 import ARGS as MISTRAL_ARGS
from .mistral_v11 import MARKERS as MISTRAL_V11_MARKERS
from .mistral_v11 import MistralV11Format
from .qwen3_coder import Qwen3CoderFormat

__all__ = ["NAMES", "HermesFormat", "Llama3JsonFormat", "MistralFormat", "MistralV11Format", "ParsedReply", "Qwen3CoderFormat", "ToolFormat", "detect", "for_tokenizer", "template_text"]

NAMES: tuple[FormatName, ...] = get_args(FormatName)


def template_text(tokenizer) -> str:
    """The chat template as text; a tokenizer with several named templates uses its `tool_use` one for tools,
    as transformers does."""
    template: Any = getattr(tokenizer, "chat_template", None) or ""
    if isinstance(template, dict):
        template = template.get("tool_use") or template.get("default") or ""
    return template if isinstance(template, str) else ""


def detect(template: str) -> FormatName:
    """The format name for a chat template's text."""
    if "tools" not in template:
        return "hermes"
    if MISTRAL_MARK in template:
        return "mistral"
    if "<function=" in template or "<parameter=" in template:
        return "qwen3_coder"
    if "<|python_tag|>" in template or ('"parameters"' in template and "ipython" in template):
        return "llama3_json"
    return "hermes"


def for_tokenizer(tokenizer) -> ToolFormat:
    template = template_text(tokenizer)
    name = detect(template)
    fmt: ToolFormat
    if name == "mistral" and MISTRAL_ARGS in template:
        special = {m: _special_token_id(tokenizer, m) for m in MISTRAL_V11_MARKERS}
        fmt = MistralV11Format(special={m: i for m, i in special.items() if i is not None})
    elif name == "mistral":
        fmt = MistralFormat(space=MISTRAL_MARK + " [" in template,
                            marker_is_special=_is_special_token(tokenizer, MISTRAL_MARK))
    elif name == "qwen3_coder":
        fmt = Qwen3CoderFormat()
    elif name == "llama3_json":
        fmt = Llama3JsonFormat()
    else:
        fmt = HermesFormat()
    fmt.tokens = kept_added_tokens(tokenizer)
    return fmt


def kept_added_tokens(tokenizer) -> dict[str, int]:
    """The added tokens that decoding keeps in the text (not special: Qwen's `<tool_call>`, `</tool_call>`), text
    → id: a grammar writes a marker that is one of them as that token (grammar.spelled). A special one is
    dropped from the decoded text the reply is parsed from, so its marker stays text in the grammar."""
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    return {t.content: i for i, t in added.items()
            if getattr(t, "content", None) and not getattr(t, "special", False)}


def _is_special_token(tokenizer, text: str) -> bool:
    return _special_token_id(tokenizer, text) is not None


def _special_token_id(tokenizer, text: str) -> int | None:
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    return next((i for i, t in added.items() if getattr(t, "content", None) == text and getattr(t, "special", False)),
                None)
