"""The trainer's advantages against the golden numbers in contracts/fixtures/advantages.json, bit for bit.

contracts/advantages.test.ts checks the TS mirror (contracts/advantages.ts, which re-score uses to show what
an edited reward would teach) against the same file, so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rollbook_engine.trainer.advantages import group_advantages

FIXTURE = Path(__file__).resolve().parents[3] / "contracts" / "fixtures" / "advantages.json"
CASES = json.loads(FIXTURE.read_text())["group_advantages"]


def test_the_fixture_has_cases():
    assert CASES


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_group_advantages_match_the_golden_numbers(case):
    # Exact equality: both sides must do the same arithmetic in the same order, not merely agree to 1e-9.
    assert group_advantages(case["rewards"], case["scale_rewards"]) == case["advantages"]
