"""Only the engine's runner may call it: with ENGINE_TOKEN set, every route but /health answers 401 without
`Authorization: Bearer <ENGINE_TOKEN>`, and /health tells a stranger nothing but liveness. Real model (CPU)
behind a real uvicorn server, as the runner reaches it."""

from __future__ import annotations

import logging

import pytest

from rollbook_engine.__main__ import main as engine_main
from rollbook_engine.auth import token_matches
from rollbook_engine.model_store import ModelStore
from rollbook_engine.server import create_app
from rollbook_engine.settings import EngineSettings

from conftest import serve_store

TOKEN = "engine-test-token-" + "x" * 46
MODEL = "SmolLM2-135M-Instruct"
CHAT = {"model": MODEL, "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 2, "seed": 1}
# Every kind of route: OpenAI's, the trainer's, and FastAPI's own docs.
GUARDED = [("POST", "/v1/chat/completions", CHAT), ("GET", "/v1/models", None), ("POST", "/train", {}),
           ("GET", "/runs/run1/checkpoints", None), ("GET", "/openapi.json", None), ("GET", "/docs", None),
           ("POST", "/tokenize", CHAT), ("POST", "/detokenize", {"token_ids": [1]})]


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    store = ModelStore(runs_dir=tmp_path_factory.mktemp("token-runs"))
    with serve_store(store, timeout_s=120, settings=EngineSettings(engine_token=TOKEN)) as (_url, client):
        yield client


def call(client, method, path, body, headers=None):
    return client.request(method, path, json=body, headers=headers or {})


@pytest.mark.parametrize("method,path,body", GUARDED)
@pytest.mark.parametrize("auth", [None, "Bearer wrong", f"Bearer {TOKEN}x", f"Basic {TOKEN}", TOKEN, "Bearer"])
def test_every_route_but_health_refuses_a_missing_or_wrong_token(engine, method, path, body, auth):
    r = call(engine, method, path, body, {"authorization": auth} if auth is not None else None)
    assert r.status_code == 401, r.text
    assert r.json()["error"]["type"] == "authentication_error"
    assert r.headers["www-authenticate"].startswith("Bearer")


def test_the_right_token_reaches_every_route(engine):
    auth = {"authorization": f"Bearer {TOKEN}"}
    r = call(engine, "POST", "/v1/chat/completions", CHAT, auth)
    assert r.status_code == 200, r.text
    assert r.json()["object"] == "chat.completion"
    r = call(engine, "GET", "/v1/models", None, auth)
    assert r.status_code == 200 and r.json()["data"][0]["id"] == MODEL
    assert call(engine, "GET", "/runs/run1/checkpoints", None, auth).json()["checkpoints"] == []
    assert call(engine, "POST", "/tokenize", CHAT, auth).json()["count"] > 0
    # /train's own validation answers (the body is empty): the request got past the token check.
    r = call(engine, "POST", "/train", {}, auth)
    assert r.status_code in (400, 422), r.text
    # The scheme is case-insensitive, as HTTP says.
    assert call(engine, "GET", "/v1/models", None, {"authorization": f"bearer {TOKEN}"}).status_code == 200


def test_health_is_open_but_tells_a_stranger_only_the_status(engine):
    stranger = engine.get("/health")
    assert stranger.status_code == 200
    assert stranger.json() == {"status": "ok"}
    runner = engine.get("/health", headers={"authorization": f"Bearer {TOKEN}"}).json()
    assert runner["status"] == "ok" and runner["model"] == MODEL and "memory" in runner


def test_token_compare_and_settings():
    assert token_matches(TOKEN, TOKEN)
    assert not token_matches(None, TOKEN) and not token_matches("", TOKEN) and not token_matches(TOKEN[:-1], TOKEN)
    assert EngineSettings.from_env({"ENGINE_TOKEN": TOKEN}).engine_token == TOKEN
    assert EngineSettings.from_env({}).engine_token is None
    # The error names the environment variable the operator set, not the Python field.
    with pytest.raises(ValueError, match=r"ENGINE_TOKEN='short'.*at least 16"):
        EngineSettings.from_env({"ENGINE_TOKEN": "short"})


def test_an_engine_without_a_token_warns_that_it_is_open(caplog):
    with caplog.at_level(logging.WARNING, logger="rollbook_engine.server"):
        create_app(MODEL, settings=EngineSettings())
    assert any("ENGINE_TOKEN is not set" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rollbook_engine.server"):
        create_app(MODEL, settings=EngineSettings(engine_token=TOKEN))
    assert not any("ENGINE_TOKEN" in r.getMessage() for r in caplog.records)


def test_the_engine_will_not_listen_beyond_loopback_without_a_token(monkeypatch, capsys):
    monkeypatch.delenv("ENGINE_TOKEN", raising=False)
    assert engine_main(["--host", "0.0.0.0", "--port", "1"]) == 2
    assert "set ENGINE_TOKEN" in capsys.readouterr().err
