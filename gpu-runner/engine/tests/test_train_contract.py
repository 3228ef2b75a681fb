"""The pydantic train contract against the shared fixture and against the zod source (config.ts, train.ts).

The TS side validates the same fixture with zod; reading the zod files here catches a field added, renamed
or re-defaulted on one side only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from rollbook_engine.contracts.train import TrainerConfig, TrainMetrics, TrainRequest, TrainStreamLine

CONTRACTS = Path(__file__).resolve().parents[3] / "contracts"
FIXTURE = CONTRACTS / "fixtures" / "train_request.json"


def _zod_object_body(source: str, name: str) -> str:
    start = source.index(f"export const {name} = z")
    end = source.index(".strict()", start) if name == "TrainerConfig" else source.index("});", start)
    return source[start:end]


def test_fixture_is_a_valid_train_request():
    req = TrainRequest.model_validate_json(FIXTURE.read_text())
    assert req.step == 1 and len(req.groups) == 2
    assert len(req.groups[0].samples[1].sequences) == 2
    # The fixture spells out every trainer field, each equal to its default.
    assert set(json.loads(FIXTURE.read_text())["config"]) == set(TrainerConfig.model_fields)
    assert req.config == TrainerConfig()


def test_trainer_config_fields_and_defaults_match_zod():
    body = _zod_object_body((CONTRACTS / "config.ts").read_text(), "TrainerConfig")
    zod_fields = dict(re.findall(r"^\s{4}(\w+): z[\s\S]*?\.default\(([^()\n]*?)\)", body, re.M))
    assert set(re.findall(r"^\s{4}(\w+): z", body, re.M)) == set(TrainerConfig.model_fields)
    defaults = TrainerConfig()
    for name, raw in zod_fields.items():
        if raw.startswith("["):
            continue
        expected = json.loads(raw.replace("'", '"'))
        assert getattr(defaults, name) == expected, name


def test_train_metrics_fields_match_zod():
    body = _zod_object_body((CONTRACTS / "train.ts").read_text(), "TrainMetrics")
    assert set(re.findall(r"^\s{2}(\w+): z", body, re.M)) == set(TrainMetrics.model_fields)


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
