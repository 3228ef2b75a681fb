"""The Python half of the identifier grammar's check: every line of contracts/fixtures/identifiers.jsonl gets its
verdict from rollbook_engine.identifiers, the parser the engine serves and trains with. contracts/identifiers.test.ts
checks the same lines with the TypeScript parser: a verdict that changes on one side only fails that side."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rollbook_engine import identifiers

CORPUS = Path(__file__).resolve().parents[3] / "contracts" / "fixtures" / "identifiers.jsonl"
SAMPLE_RUN = "rb6f1c0e2d4a94b1c8e7f1a2b3c4d5e6f"


def _lines() -> list[dict]:
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if "$comment" not in r]


def _id(row: dict) -> str:
    return f"{row['kind']}:{row['input'][:40].encode('unicode_escape').decode()}"


@pytest.mark.parametrize("row", [r for r in _lines() if r["kind"] != "model"], ids=_id)
def test_identifier_verdicts_match_the_shared_corpus(row: dict) -> None:
    assert identifiers.is_identifier(row["kind"], row["input"]) is row["ok"], row["why"]


@pytest.mark.parametrize("row", [r for r in _lines() if r["kind"] == "model"], ids=_id)
def test_model_name_verdicts_match_the_shared_corpus(row: dict) -> None:
    name = row["input"].replace("{run}", SAMPLE_RUN)
    assert identifiers.classify_model_name(name) == row["verdict"], row["why"]
    parsed = identifiers.parse_checkpoint_model(name)
    if row["verdict"] == "checkpoint":
        assert parsed is not None and parsed.step == row["step"]
    else:
        assert parsed is None


def test_the_corpus_covers_every_identifier() -> None:
    assert set(identifiers.kinds()) <= {r["kind"] for r in _lines()}


def test_what_python_alone_would_have_accepted_is_refused() -> None:
    # The slip this grammar replaces, shown on its own: Python's \d and $ accept what the shared grammar refuses.
    old = re.compile(r"^(?P<run>.+)@(?P<step>\d+)$")
    for hostile in (f"{SAMPLE_RUN}@\uff12", f"{SAMPLE_RUN}@\u0662", f"{SAMPLE_RUN}@2\n"):
        assert old.match(hostile) is not None
        assert identifiers.parse_checkpoint_model(hostile) is None
