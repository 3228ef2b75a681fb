"""Tool-call formats per model family, chosen from the model's chat template (never per run).

Detection reads the template text for what only that family's template writes:
- `[TOOL_CALLS]` → mistral (mistral.py);
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
from .qwen3_coder import Qwen3CoderFormat

__all__ = ["NAMES", "HermesFormat", "Llama3JsonFormat", "MistralFormat", "ParsedReply", "Qwen3CoderFormat", "ToolFormat", "detect", "for_tokenizer", "template_text"]

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
    if name == "mistral":
        return MistralFormat(space=MISTRAL_MARK + " [" in template,
                             marker_is_special=_is_special_token(tokenizer, MISTRAL_MARK))
    if name == "qwen3_coder":
        return Qwen3CoderFormat()
    if name == "llama3_json":
        return Llama3JsonFormat()
    return HermesFormat()


def _is_special_token(tokenizer, text: str) -> bool:
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    return any(getattr(t, "content", None) == text and getattr(t, "special", False) for t in added.values())
