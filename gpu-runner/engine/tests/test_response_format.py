"""response_format on the real engine (SmolLM2-135M): json_object and json_schema replies are decoded under the
JSON constraint (json_reply.py), so a finished reply parses and matches its schema at temperature 1, where the
unconstrained model writes prose; a schema llguidance cannot compile, and JSON beside tools the model may call,
are 400s naming response_format; a forced call wins over a JSON format."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = pytest.mark.conformance  # run against both backends (conftest.BACKEND)

MODEL = "SmolLM2-135M-Instruct"
ASK = [{"role": "user", "content": "Name one animal and say how many legs it has."}]
ANIMAL = {"type": "object", "properties": {"animal": {"type": "string", "maxLength": 20},
                                           "legs": {"type": "integer", "minimum": 0, "maximum": 1000}},
          "required": ["animal", "legs"], "additionalProperties": False}
# RULER's Response model as LiteLLM sends it (art.rewards.ruler): a list of scored trajectories.
SCORES = {"type": "object", "additionalProperties": False, "required": ["scores"], "properties": {"scores": {
    "type": "array", "items": {"type": "object", "additionalProperties": False,
                               "required": ["trajectory_id", "explanation", "score"],
                               "properties": {"trajectory_id": {"type": "string", "maxLength": 4},
                                              "explanation": {"type": "string", "maxLength": 60},
                                              "score": {"type": "number"}}}}}}


def chat(served, **body):
    return served.client.post("/v1/chat/completions", json={"model": MODEL, "messages": ASK, **body})


def replies(served, n_seeds: int, **body) -> list[dict]:
    with ThreadPoolExecutor(max_workers=n_seeds) as pool:
        answers = list(pool.map(lambda seed: chat(served, temperature=1.0, seed=seed, **body), range(n_seeds)))
    for r in answers:
        assert r.status_code == 200, r.text
    return [r.json()["choices"][0] for r in answers]


def test_unconstrained_replies_are_not_json(served):
    # The tests below must be able to fail: without response_format the model answers in prose.
    texts = [c["message"]["content"] for c in replies(served, 4, max_tokens=40)]
    parsed = 0
    for text in texts:
        try:
            json.loads(text)
            parsed += 1
        except ValueError:
            pass
    assert parsed == 0, texts


def test_json_schema_replies_parse_and_match_the_schema(served):
    fmt = {"type": "json_schema", "json_schema": {"name": "animal", "schema": ANIMAL, "strict": True}}
    for c in replies(served, 8, max_tokens=60, response_format=fmt):
        assert c["finish_reason"] == "stop", c
        value = json.loads(c["message"]["content"])
        assert set(value) == {"animal", "legs"} and isinstance(value["animal"], str), value
        assert isinstance(value["legs"], int) and 0 <= value["legs"] <= 1000, value


def test_a_ruler_shaped_schema_gives_scores(served):
    fmt = {"type": "json_schema", "json_schema": {"name": "Response", "schema": SCORES, "strict": True}}
    for c in replies(served, 3, max_tokens=200, response_format=fmt):
        if c["finish_reason"] == "stop":
            scores = json.loads(c["message"]["content"])["scores"]
            assert all(isinstance(s["score"], int | float) for s in scores), scores


def test_json_object_replies_are_objects_or_cut(served):
    finished = 0
    for c in replies(served, 6, max_tokens=60, response_format={"type": "json_object"}):
        text = c["message"]["content"]
        assert text.startswith("{"), c
        if c["finish_reason"] == "stop":
            assert isinstance(json.loads(text), dict), c
            finished += 1
        else:
            assert c["finish_reason"] == "length", c
    assert finished >= 1


def test_text_format_is_plain_sampling(served):
    plain = chat(served, temperature=1.0, seed=3, max_tokens=20).json()["choices"][0]["message"]["content"]
    text = chat(served, temperature=1.0, seed=3, max_tokens=20, response_format={"type": "text"}).json()
    assert text["choices"][0]["message"]["content"] == plain


@pytest.mark.parametrize("fmt", [
    {"type": "json_schema", "json_schema": {"name": "bad", "schema": {"type": "string", "pattern": "(unclosed"}}},
    {"type": "json_schema", "json_schema": {"name": "no spaces allowed", "schema": ANIMAL}},
    {"type": "xml"},
])
def test_a_bad_format_is_a_400_naming_response_format(served, fmt):
    r = chat(served, max_tokens=5, response_format=fmt)
    assert r.status_code == 400, r.text
    assert (r.json()["error"]["param"] or "").startswith("response_format"), r.json()


WEATHER = {"type": "function", "function": {"name": "weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"]}}}


def test_json_beside_tools_the_model_may_call_is_refused(served):
    r = chat(served, max_tokens=5, tools=[WEATHER], response_format={"type": "json_object"})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == "response_format" and "tool call" in err["message"], err


def test_a_forced_call_wins_over_a_json_format(served):
    c = chat(served, max_tokens=40, tools=[WEATHER], tool_choice="required",
             response_format={"type": "json_object"}).json()["choices"][0]
    assert c["finish_reason"] == "tool_calls", c
    assert c["message"]["tool_calls"][0]["function"]["name"] == "weather"
