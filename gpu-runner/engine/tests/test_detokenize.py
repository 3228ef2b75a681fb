"""POST /detokenize on the real SmolLM2 tokenizer, and its contract against the shared fixture and against
zod's JSON Schema."""

from __future__ import annotations

import json

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from zod_contract import CONTRACTS, pydantic_schema, schema_problems, zod_schemas

from rollbook_engine.contracts.detokenize import DetokenizeRequest, DetokenizeResponse
from rollbook_engine.model_store import ModelStore
from rollbook_engine.vocab_routes import router

FIXTURE = CONTRACTS / "fixtures" / "detokenize.json"


def test_fixture_parses_with_the_pydantic_mirror():
    data = json.loads(FIXTURE.read_text())
    assert DetokenizeRequest.model_validate(data["request"]).token_ids == [1, 2, 28, 198]
    assert DetokenizeResponse.model_validate(data["response"]).pieces[-1] == "\n"


def test_pydantic_mirror_matches_the_zod_json_schema():
    zod = zod_schemas({"detokenize.ts": ["DetokenizeRequest", "DetokenizeResponse"]})["detokenize.ts"]
    assert schema_problems(zod["DetokenizeRequest"]["input"], pydantic_schema(DetokenizeRequest), "input",
                           "DetokenizeRequest") == []
    assert schema_problems(zod["DetokenizeResponse"]["output"], pydantic_schema(DetokenizeResponse), "output",
                           "DetokenizeResponse") == []


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    app = FastAPI()
    app.state.store = ModelStore(runs_dir=tmp_path_factory.mktemp("runs"))
    app.include_router(router)
    with TestClient(app) as c:
        yield c, app.state.store


def test_pieces_join_back_to_the_text(client):
    c, store = client
    text = "<|im_start|>user\nSay  the word \"tunnel\".\n\tok<|im_end|>"
    ids = store.tokenizer.encode(text, add_special_tokens=False)
    r = c.post("/detokenize", json={"token_ids": ids})
    assert r.status_code == 200
    pieces = r.json()["pieces"]
    assert len(pieces) == len(ids)
    assert pieces[0] == "<|im_start|>"
    # Whole characters here, so the pieces are the text, whitespace and newline included.
    assert "".join(pieces) == text


def test_bad_ids_name_the_field(client):
    c, store = client
    r = c.post("/detokenize", json={"token_ids": [1, store.vocab.size]})
    assert r.status_code == 422 and r.json()["field"] == "token_ids.1"
    r = c.post("/detokenize", json={"token_ids": [1, -1]})
    assert r.status_code == 422 and r.json()["field"] == "token_ids.1"
    r = c.post("/detokenize", json={"token_ids": "1,2"})
    assert r.status_code == 422 and r.json()["field"] == "token_ids"
