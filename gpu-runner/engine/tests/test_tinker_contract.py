"""The pydantic Tinker contract (contracts/tinker.py) against its zod source (contracts/tinker-engine.ts).

The same mechanism as test_train_contract.py: both sides' JSON Schema compared field by field (zod_contract.py),
so a field added, renamed, retyped, re-bounded or re-defaulted on one side only fails here.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from zod_contract import pydantic_schema, schema_problems, zod_schemas

from rollbook_engine.contracts import tinker as t

MODULE = "tinker-engine.ts"
# export → (pydantic mirror, side): requests as the engine parses them (zod's input view), responses as it
# writes them (the output view).
PAIRS = {
    "TinkerDatum": (t.TinkerDatum, "input"),
    "TinkerForwardBackwardRequest": (t.TinkerForwardBackwardRequest, "input"),
    "TinkerForwardBackwardResponse": (t.TinkerForwardBackwardResponse, "output"),
    "TinkerAdamParams": (t.TinkerAdamParams, "input"),
    "TinkerOptimStepRequest": (t.TinkerOptimStepRequest, "input"),
    "TinkerOptimStepResponse": (t.TinkerOptimStepResponse, "output"),
    "TinkerSaveRequest": (t.TinkerSaveRequest, "input"),
    "TinkerSaveResponse": (t.TinkerSaveResponse, "output"),
    "TinkerLoadRequest": (t.TinkerLoadRequest, "input"),
    "TinkerLoadResponse": (t.TinkerLoadResponse, "output"),
    "TinkerSampleRequest": (t.TinkerSampleRequest, "input"),
    "TinkerSampleResponse": (t.TinkerSampleResponse, "output"),
}


@pytest.fixture(scope="module")
def zod() -> dict:
    return zod_schemas({MODULE: [*PAIRS, "TinkerLoss"]})[MODULE]


@pytest.mark.parametrize("name", list(PAIRS))
def test_pydantic_mirror_matches_the_zod_json_schema(zod, name):
    model, side = PAIRS[name]
    assert schema_problems(zod[name][side], pydantic_schema(model), side, name) == []


def test_the_loss_names_agree(zod):
    assert sorted(zod["TinkerLoss"]["input"]["enum"]) == sorted(t.TINKER_LOSSES)


def test_the_comparison_catches_a_drift(zod):
    pyd = pydantic_schema(t.TinkerSampleRequest)
    pyd["properties"]["num_samples"]["maximum"] = 128
    pyd["properties"]["prompt_logprobs"]["default"] = True
    problems = schema_problems(zod["TinkerSampleRequest"]["input"], pyd, "input", "s")
    assert any(p.startswith("s.num_samples: maximum") for p in problems), problems
    assert any(p.startswith("s.prompt_logprobs: default") for p in problems), problems


def test_non_finite_numbers_and_coercion_are_refused():
    base = {"run_id": "r", "base_model": "m", "lora_rank": 4, "seed": 0, "forward_only": False,
            "loss_fn": "cross_entropy", "data": [{"tokens": [1], "target_tokens": [2], "weights": [1.0]}]}
    t.TinkerForwardBackwardRequest.model_validate(base)
    bad = {**base, "data": [{"tokens": [1], "target_tokens": [2], "weights": [float("nan")]}]}
    with pytest.raises(ValidationError):
        t.TinkerForwardBackwardRequest.model_validate(bad)
    with pytest.raises(ValidationError):
        t.TinkerForwardBackwardRequest.model_validate({**base, "lora_rank": "4"})
    with pytest.raises(ValidationError):  # loss_fn_config is .strict() in zod
        t.TinkerForwardBackwardRequest.model_validate({**base, "loss_fn_config": {"clip": 1}})
