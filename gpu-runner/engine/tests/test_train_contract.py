"""The pydantic train contract against the shared fixture and against the zod source (config.ts, train.ts).

The TS side validates the same fixture with zod; comparing the JSON Schema zod emits with the pydantic
models' (zod_contract.py) catches a field added, renamed, retyped, re-bounded or re-defaulted on one side only.
"""

from __future__ import annotations

import json

import pytest
from pydantic import TypeAdapter, ValidationError
from zod_contract import CONTRACTS, pydantic_schema, schema_problems, zod_schemas

from rollbook_engine.contracts.train import TrainerConfig, TrainRequest, TrainStreamLine

FIXTURE = CONTRACTS / "fixtures" / "train_request.json"

# (zod module, export) → (pydantic mirror, side): the request is what the engine parses (zod's input view, where
# a default makes a field optional); the stream lines are what it writes (the output view).
PAIRS = {
    ("train.ts", "TrainRequest"): (TrainRequest, "input"),
    ("config.ts", "TrainerConfig"): (TrainerConfig, "input"),
    ("train.ts", "TrainStreamLine"): (TrainStreamLine, "output"),
}


@pytest.fixture(scope="module")
def zod() -> dict:
    wanted: dict[str, list[str]] = {}
    for module, name in PAIRS:
        wanted.setdefault(module, []).append(name)
    return zod_schemas(wanted)


def test_fixture_is_a_valid_train_request():
    req = TrainRequest.model_validate_json(FIXTURE.read_text())
    assert req.step == 1 and len(req.groups) == 2
    assert len(req.groups[0].samples[1].sequences) == 2
    # A re-tokenised reply sampled elsewhere; absent means false.
    assert req.groups[1].samples[1].sequences[0].recomputed_logprobs is True
    assert not req.groups[0].samples[0].sequences[0].recomputed_logprobs
    # The fixture spells out every trainer field, each equal to its default.
    assert set(json.loads(FIXTURE.read_text())["config"]) == set(TrainerConfig.model_fields)
    assert req.config == TrainerConfig()


@pytest.mark.parametrize("key", list(PAIRS), ids=lambda key: key[1])
def test_pydantic_mirror_matches_the_zod_json_schema(zod, key):
    (module, name), (model, side) = key, PAIRS[key]
    assert schema_problems(zod[module][name][side], pydantic_schema(model), side, name) == []


def test_the_comparison_catches_a_drifted_bound_or_default(zod):
    # The check above must be able to fail: the trainer's config with a bound, a default and an enum drifted does.
    pyd = pydantic_schema(TrainerConfig)
    pyd["properties"]["lora_rank"]["maximum"] = 512
    pyd["properties"]["learning_rate"]["default"] = 1e-4
    pyd["properties"]["adam_beta1"]["maximum"] = pyd["properties"]["adam_beta1"].pop("exclusiveMaximum")
    pyd["properties"]["loss"]["enum"].append("reinforce")
    problems = schema_problems(zod["config.ts"]["TrainerConfig"]["input"], pyd, "input", "cfg")
    for expected in ("cfg.lora_rank: maximum", "cfg.learning_rate: default", "cfg.adam_beta1: exclusiveMaximum",
                     "cfg.loss: values"):
        assert any(p.startswith(expected) for p in problems), expected


@pytest.mark.parametrize(
    "patch, field",
    [
        ({"config": {"learning_rate": 0}}, ("config", "learning_rate")),
        ({"config": {"loss": "reinforce"}}, ("config", "loss")),
        ({"config": {"typo": 1}}, ("config", "typo")),
        ({"step": 0}, ("step",)),
        ({"step": "1"}, ("step",)),
        ({"run_id": ""}, ("run_id",)),
    ],
)
def test_invalid_requests_name_the_field(patch, field):
    data = json.loads(FIXTURE.read_text())
    for k, v in patch.items():
        data[k] = {**data[k], **v} if isinstance(v, dict) else v
    with pytest.raises(ValidationError) as e:
        TrainRequest.model_validate(data)
    assert e.value.errors()[0]["loc"][: len(field)] == field


def test_sequence_lengths_and_finite_rewards():
    data = json.loads(FIXTURE.read_text())
    data["groups"][0]["samples"][0]["sequences"][0]["mask"].append(0)
    with pytest.raises(ValidationError, match="same length"):
        TrainRequest.model_validate(data)
    data = json.loads(FIXTURE.read_text())
    data["groups"][0]["samples"][0]["reward"] = float("nan")
    with pytest.raises(ValidationError):
        TrainRequest.model_validate(data)


def test_stream_lines_round_trip():
    ta = TypeAdapter(TrainStreamLine)
    assert ta.validate_python({"type": "progress", "micro_batch": 1, "micro_batches": 2, "loss": 0.5}).type == "progress"
    assert ta.validate_python({"type": "error", "message": "x"}).type == "error"
    with pytest.raises(ValidationError):
        ta.validate_python({"type": "nope"})


def test_result_fixture_with_token_logprobs():
    """The shared result fixture (also parsed by fixtures.test.ts) carries per-trajectory trainer logprobs."""
    line = TypeAdapter(TrainStreamLine).validate_json((CONTRACTS / "fixtures" / "train_result.json").read_text())
    assert line.type == "result"
    assert line.token_logprobs["s1-0-1"].sequences == [[-2.5], []]
    assert line.token_logprobs["s1-0-0"].advantage == 0.99
    # Older engines sent no token_logprobs: it defaults to empty, as zod's .default({}).
    bare = json.loads((CONTRACTS / "fixtures" / "train_result.json").read_text())
    del bare["token_logprobs"]
    assert TypeAdapter(TrainStreamLine).validate_python(bare).token_logprobs == {}
