"""The grammar of every identifier the engine parses (run ids, steps, `<run>@<step>`, adapter keys, tool names…),
read from contracts/identifiers.json: the file the web server and the runner read too (contracts/identifiers.ts).

Why one data file: a name both sides parse is a contract. The hole this closes was two spellings of one rule:
the web server checked `<run>@<step>` with JavaScript's `\\d` (ASCII) while the engine matched Python's `\\d` (any
Unicode digit) and `$` (which matches before a final newline), so `<run>@２` and `<run>@2\\n` passed the web server
as base model names and were served here as another workspace's checkpoint.

Every pattern is matched against the whole string with `re.fullmatch` and `re.ASCII`, after a length check.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import NamedTuple

GRAMMAR_FILE = Path(__file__).resolve().parents[3] / "contracts" / "identifiers.json"
_REF = re.compile(r"\{([a-z_]+)\}")


@cache
def _rules() -> dict[str, dict]:
    return json.loads(GRAMMAR_FILE.read_text(encoding="utf-8"))["identifiers"]


def expanded_pattern(kind: str, seen: tuple[str, ...] = ()) -> str:
    """The pattern with its `{name}` references replaced by the named identifiers' patterns, as groups."""
    rules = _rules()
    if kind in seen:
        raise ValueError(f"identifiers.json: {kind} refers to itself through {' -> '.join(seen)}")

    def insert(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in rules:
            raise ValueError(f"identifiers.json: {kind} refers to an unknown identifier {{{name}}}")
        return f"(?:{expanded_pattern(name, (*seen, kind))})"

    return _REF.sub(insert, rules[kind]["pattern"])


@cache
def _compiled(kind: str) -> re.Pattern[str]:
    return re.compile(expanded_pattern(kind), re.ASCII)


def is_identifier(kind: str, value: object) -> bool:
    """True when `value` is a well-formed `kind`: the whole string, within its length bound."""
    if not isinstance(value, str) or len(value) > _rules()[kind]["max_length"]:
        return False
    return _compiled(kind).fullmatch(value) is not None


def rule(kind: str) -> str:
    """What a well-formed `kind` looks like, for error messages."""
    return str(_rules()[kind]["description"])


def kinds() -> list[str]:
    return list(_rules())


class CheckpointName(NamedTuple):
    run: str
    step: int


def parse_checkpoint_model(name: str) -> CheckpointName | None:
    """`<run>@<step>` -> its parts; None for anything else (a base model name, or no model name at all)."""
    if not is_identifier("checkpoint_model", name):
        return None
    run, _, step = name.rpartition("@")
    return CheckpointName(run, int(step))


def classify_model_name(name: str) -> str:
    """"checkpoint", "base" or "invalid", as contracts/model-ref.ts's classifyModelName decides."""
    if parse_checkpoint_model(name) is not None:
        return "checkpoint"
    if "@" not in name and is_identifier("base_model", name):
        return "base"
    return "invalid"
