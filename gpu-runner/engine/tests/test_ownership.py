"""The engine serves a checkpoint only to a request of the workspace that owns its run (ownership.py), whatever
the web server and the runner decided before it: called directly, as a runner with a parser slip would call it.

On the real SmolLM2-135M over HTTP: workspace A's checkpoint `runa@1` (a real LoRA, A recorded as its owner as
the runner records it), asked for by workspace B, by no workspace, and in the hostile spellings of the shared
corpus (contracts/fixtures/identifiers.jsonl) with A's own workspace. The control: A itself is served."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from rollbook_engine.ownership import WORKSPACE_HEADER

from conftest import own_run, write_lora_checkpoint

pytestmark = pytest.mark.conformance  # run against both backends (conftest.BACKEND)

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "contracts" / "fixtures" / "identifiers.jsonl"
A, B = "ws-a", "ws-b"
MODEL = "runa@1"


@pytest.fixture(scope="module")
def engine(served):
    """The session's served engine (one engine start less: ~40 s with vLLM) with A's checkpoint on it."""
    store = served.store
    write_lora_checkpoint(store, store.checkpoint_dir("runa", 1))
    own_run(store, "runa", A)
    # A run whose owner was never recorded (a folder of another runner, or from before owners were kept).
    write_lora_checkpoint(store, store.checkpoint_dir("orphan", 1))
    return served.client, store


def chat(client, model: str, workspace: str | bytes | None):
    headers = {WORKSPACE_HEADER: workspace} if workspace is not None else {}
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    return client.post("/v1/chat/completions", json=body, headers=headers)


def test_a_checkpoint_is_served_to_its_own_workspace_only(engine):
    client, _store = engine
    assert chat(client, MODEL, A).status_code == 200  # the control
    for other in (B, None, "", "WS-A", "ws-a-", "ws-a\u200b".encode()):
        r = chat(client, MODEL, other)
        assert r.status_code == 404, (other, r.text)
        # The same words as a checkpoint that does not exist: nothing tells B that A's run is here.
        assert r.json()["error"]["message"] == chat(client, "runa@9", A).json()["error"]["message"].replace("9", "1")
    assert chat(client, "orphan@1", A).status_code == 404
    assert chat(client, "orphan@1", None).status_code == 404


def test_models_lists_a_workspaces_own_loaded_checkpoints_only(engine):
    client, _ = engine
    assert chat(client, MODEL, A).status_code == 200  # loaded now
    def ids(ws):
        return [m["id"] for m in client.get("/v1/models", headers={WORKSPACE_HEADER: ws} if ws else {}).json()["data"]]
    assert MODEL in ids(A)
    assert MODEL not in ids(B) and MODEL not in ids(None)


def test_tokenize_refuses_another_workspaces_checkpoint(engine):
    client, _ = engine
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    assert client.post("/tokenize", json=body, headers={WORKSPACE_HEADER: A}).status_code == 200
    assert client.post("/tokenize", json=body, headers={WORKSPACE_HEADER: B}).status_code == 404


def test_hostile_spellings_of_a_checkpoint_reach_nothing(engine):
    client, _ = engine
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    spellings = [r["input"].replace("{run}", "runa") for r in rows if r.get("kind") == "model" and r["verdict"] == "invalid"]
    assert len(spellings) > 30
    for name in spellings:
        if "\x00" in name:
            continue  # JSON carries it, but the request door refuses NUL before any model is read (test_request_limits)
        r = chat(client, name, A)
        assert r.status_code in (400, 404), (name, r.status_code, r.text)


def test_a_fork_starts_only_from_a_checkpoint_of_its_own_workspace(engine):
    client, _ = engine
    own_run(engine[1], "forkb", B)
    body = {"run_id": "forkb", "step": 1, "base_model": "SmolLM2-135M-Instruct", "seed": 7, "config": {},
            "init_from": {"run_id": "runa", "step": 1}, "groups": []}
    refused = client.post("/train", json=body, headers={WORKSPACE_HEADER: B})
    assert refused.status_code == 404 and refused.json()["field"] == "init_from.run_id", refused.text
    assert client.post("/train", json=body).status_code == 404
    # A's own fork passes the owner check (and is refused later for what this test checkpoint lacks: an optimizer state).
    mine = client.post("/train", json={**body, "run_id": "forka"}, headers={WORKSPACE_HEADER: A})
    assert mine.json().get("field") != "init_from.run_id", mine.text


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_the_header_is_the_one_the_typescript_side_sends():
    script = 'import { RUNNER_WORKSPACE_HEADER } from "./contracts/run.ts"; process.stdout.write(RUNNER_WORKSPACE_HEADER);'
    out = subprocess.run(["node", "--import", "tsx", "--input-type=module", "-e", script], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == WORKSPACE_HEADER
