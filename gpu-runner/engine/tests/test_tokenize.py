"""POST /tokenize on the real engine (SmolLM2-135M over HTTP): the ids are the ones chat completions feeds the
model for the same body, a whole conversation re-tokenises a reply sampled elsewhere, errors name the field;
and its contract against the shared fixture and zod's JSON Schema."""

from __future__ import annotations

import json

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from zod_contract import CONTRACTS, pydantic_schema, schema_problems, zod_schemas

from rollbook_engine.contracts.tokenize import TokenizeRequest, TokenizeResponse
from rollbook_engine.settings import EngineSettings
from rollbook_engine.tokenize_route import router

pytestmark = pytest.mark.conformance  # run against both backends (conftest.BACKEND)

MODEL = "SmolLM2-135M-Instruct"
FIXTURE = CONTRACTS / "fixtures" / "tokenize.json"
ADD = {"type": "function", "function": {"name": "add", "description": "Add two numbers", "parameters": {
    "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}
MUL = {"type": "function", "function": {"name": "mul", "parameters": {"type": "object"}}}
# Multi-turn, with an earlier tool call and its result: the prompt of the assistant's next reply.
CONVERSATION = [
    {"role": "system", "content": "Use the tools."},
    {"role": "user", "content": "What is 2+3, then times 4?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "5"},
]


# ---- contract ----------------------------------------------------------------------------------------


def test_fixture_parses_with_the_pydantic_mirror():
    data = json.loads(FIXTURE.read_text())
    req = TokenizeRequest.model_validate(data["request"])
    assert req.add_generation_prompt is False and req.messages[1].role == "assistant"
    del data["request"]["add_generation_prompt"]
    assert TokenizeRequest.model_validate(data["request"]).add_generation_prompt is True
    assert TokenizeResponse.model_validate(data["response"]).tokens == [1, 4093, 198, 2]


def test_pydantic_mirror_matches_the_zod_json_schema():
    zod = zod_schemas({"tokenize.ts": ["TokenizeRequest", "TokenizeResponse"]})["tokenize.ts"]
    assert schema_problems(zod["TokenizeRequest"]["input"], pydantic_schema(TokenizeRequest), "input",
                           "TokenizeRequest") == []
    assert schema_problems(zod["TokenizeResponse"]["output"], pydantic_schema(TokenizeResponse), "output",
                           "TokenizeResponse") == []
    # The check can fail: a drifted default of the one field /tokenize adds is caught.
    drifted = pydantic_schema(TokenizeRequest)
    drifted["properties"]["add_generation_prompt"]["default"] = False
    assert schema_problems(zod["TokenizeRequest"]["input"], drifted, "input", "req") == [
        "req.add_generation_prompt: default zod true vs pydantic false"]


# ---- the real engine ---------------------------------------------------------------------------------


def chat_prompt_ids(served, body: dict) -> list[int]:
    r = served.client.post("/v1/chat/completions", json={
        **body, "model": MODEL, "max_tokens": 1, "temperature": 0, "return_token_ids": True})
    assert r.status_code == 200, r.text
    return r.json()["prompt_token_ids"]


def tokenize(served, body: dict) -> dict:
    r = served.client.post("/tokenize", json={"model": MODEL, **body})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["count"] == len(out["tokens"]) and out["max_model_len"] == served.store.max_context_tokens
    return out


@pytest.mark.parametrize("tool_choice", [None, "auto", "required", {"type": "function", "function": {"name": "mul"}},
                                         "none"])
def test_ids_are_exactly_the_chat_completions_prompt_ids(served, tool_choice):
    body = {"messages": CONVERSATION, "tools": [ADD, MUL], **({"tool_choice": tool_choice} if tool_choice else {})}
    got = tokenize(served, body)["tokens"]
    assert got == chat_prompt_ids(served, body)
    text = served.store.tokenizer.decode(got)
    assert "<tool_response>\n5\n</tool_response>" in text  # the tool result is in it
    # tool_choice shapes the prompt (tools shown or not, prefill), so the cases above are not all one prompt.
    assert ("<tools>" in text) == (tool_choice != "none")
    if tool_choice == "required":
        assert text.endswith('<|im_start|>assistant\n<tool_call>\n{"name": "')


def test_a_continued_conversation_is_the_chat_prompt_too(served):
    first = chat_prompt_ids(served, {"messages": CONVERSATION[:2], "tools": [ADD]})
    reply = served.store.tokenizer.encode('<tool_call>\n{"name":"add","arguments":{"a":2,"b":3}}\n</tool_call><|im_end|>',
                                          add_special_tokens=False)
    body = {"messages": CONVERSATION, "tools": [ADD], "continue_from": {"token_ids": first + reply, "message_count": 3}}
    got = tokenize(served, body)["tokens"]
    assert got[:len(first) + len(reply)] == first + reply
    assert got == chat_prompt_ids(served, body)


def test_without_generation_prompt_the_whole_conversation_re_tokenises_a_reply(served):
    """A reply sampled elsewhere, re-tokenised: the conversation's ids extend the prompt ids the engine would
    have sampled it from (SmolLM2's generation header is how its assistant turn starts, so nothing is dropped),
    and the rest is the reply and the end of its turn."""
    tok = served.store.tokenizer
    r = served.client.post("/v1/chat/completions", json={
        "model": MODEL, "messages": CONVERSATION, "tools": [ADD, MUL], "max_tokens": 16, "temperature": 0,
        "return_token_ids": True})
    assert r.status_code == 200, r.text
    prompt, choice = r.json()["prompt_token_ids"], r.json()["choices"][0]
    reply = {"role": "assistant", "content": choice["message"]["content"] or "",
             **({"tool_calls": choice["message"]["tool_calls"]} if choice["message"].get("tool_calls") else {})}
    assert tok.decode(prompt).endswith("<|im_start|>assistant\n")  # the generation header…
    whole = tokenize(served, {"messages": [*CONVERSATION, reply], "tools": [ADD, MUL], "add_generation_prompt": False})
    ids = whole["tokens"]
    assert ids[:len(prompt)] == prompt  # …is kept: the whole prompt is a prefix
    tail = tok.decode(ids[len(prompt):])
    if reply.get("tool_calls"):
        assert tail.startswith("<tool_call>\n") and tail.endswith("</tool_call><|im_end|>\n"), tail
    else:
        assert tail == reply["content"] + "<|im_end|>\n"
    # Same ids as the template's own text of the conversation, tokenised without added special tokens.
    plain = tokenize(served, {"messages": [*CONVERSATION, {"role": "assistant", "content": "It is 20."}],
                              "tools": [ADD, MUL], "add_generation_prompt": False})["tokens"]
    assert plain[:len(prompt)] == prompt
    assert tok.decode(plain[len(prompt):]) == "It is 20.<|im_end|>\n"
    assert plain[len(prompt):] == tok.encode("It is 20.<|im_end|>\n", add_special_tokens=False)


@pytest.mark.parametrize("tool_choice", ["auto", "required", {"type": "function", "function": {"name": "mul"}}])
def test_a_tool_call_reply_is_written_as_the_template_writes_calls(served, tool_choice):
    """With SmolLM2's template the prompt stays a prefix even when tool_choice prefilled part of the call: the
    template writes the call's start exactly as the prefill did, and the tokens split at the same place."""
    tok = served.store.tokenizer
    body = {"tools": [ADD, MUL], "tool_choice": tool_choice}
    prompt = chat_prompt_ids(served, {"messages": CONVERSATION, **body})
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_2", "type": "function", "function": {"name": "mul", "arguments": '{"a": 5, "b": 4}'}}]}
    ids = tokenize(served, {"messages": [*CONVERSATION, call], **body, "add_generation_prompt": False})["tokens"]
    assert ids[:len(prompt)] == prompt
    assert tok.decode(ids).endswith(
        '<|im_start|>assistant\n<tool_call>\n{"name": "mul", "arguments": {"a": 5, "b": 4}}\n</tool_call><|im_end|>\n')


def forced_reply(served, body: dict, workspace: str | None = None, stream: bool = False) -> tuple[list[int], list[int]]:
    """A forced call sampled as ART samples it (logprobs, token ids): (the prompt fed, the sampled ids)."""
    headers = {"x-rollbook-workspace": workspace} if workspace else {}
    req = {**body, "model": MODEL, "max_tokens": 24, "temperature": 1.0, "seed": 7, "logprobs": True,
           "return_tokens_as_token_ids": True}
    # The fed prompt, as a client cannot see it (return_token_ids), only to compare with.
    prompt = served.client.post("/v1/chat/completions", json={**req, "max_tokens": 1, "return_token_ids": True},
                                headers=headers).json()["prompt_token_ids"]
    if stream:
        with served.client.stream("POST", "/v1/chat/completions", json={**req, "stream": True}, headers=headers) as r:
            assert r.status_code == 200
            lines = [json.loads(x[6:]) for x in r.iter_lines() if x.startswith("data: {")]
        entries = [e for c in lines for ch in c["choices"] for e in ((ch.get("logprobs") or {}).get("content") or [])]
    else:
        r = served.client.post("/v1/chat/completions", json=req, headers=headers)
        assert r.status_code == 200, r.text
        entries = r.json()["choices"][0]["logprobs"]["content"]
    return prompt, [int(e["token"].removeprefix("token_id:")) for e in entries]


@pytest.mark.parametrize("tool_choice, stream", [("required", False), ({"type": "function", "function": {"name": "mul"}}, True)])
def test_a_forced_reply_is_answered_the_prompt_it_was_fed_prefill_included(served, tool_choice, stream):
    """ART sends the conversation back without tool_choice: the messages alone render the prompt without the
    forced call's prefill. Given the sampled ids, /tokenize answers the prompt the engine fed (its record)."""
    ws = "ws_forced_reply"
    fed, sampled = forced_reply(served, {"messages": CONVERSATION, "tools": [ADD, MUL], "tool_choice": tool_choice},
                                ws, stream)
    assert sampled
    back = {"messages": CONVERSATION, "tools": [ADD, MUL]}  # what ART sends: no tool_choice
    rendered = tokenize(served, back)
    assert rendered["served"] is False and len(rendered["tokens"]) < len(fed)  # the prefill is missing
    assert fed[:len(rendered["tokens"])] == rendered["tokens"]
    got = served.client.post("/tokenize", json={"model": MODEL, **back, "sampled_token_ids": sampled},
                             headers={"x-rollbook-workspace": ws}).json()
    assert got["served"] is True and got["tokens"] == fed and got["count"] == len(fed)
    # Another workspace, no workspace, other messages, other ids: no record, the rendering.
    for headers, body, ids in [({"x-rollbook-workspace": "ws_other"}, back, sampled), ({}, back, sampled),
                               ({"x-rollbook-workspace": ws}, {**back, "messages": CONVERSATION[:2]}, sampled),
                               ({"x-rollbook-workspace": ws}, back, [*sampled, 2])]:
        other = served.client.post("/tokenize", json={"model": MODEL, **body, "sampled_token_ids": ids},
                                   headers=headers).json()
        assert other["served"] is False and other["tokens"] == tokenize(served, body)["tokens"]


def test_a_reply_sampled_without_prefill_needs_no_record(served):
    body = {"messages": CONVERSATION, "tools": [ADD, MUL]}
    fed, sampled = forced_reply(served, body, "ws_auto")
    got = served.client.post("/tokenize", json={"model": MODEL, **body, "sampled_token_ids": sampled},
                             headers={"x-rollbook-workspace": "ws_auto"}).json()
    assert got["served"] is False and got["tokens"] == fed


@pytest.mark.parametrize("patch, status, field", [
    ({"messages": [{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}]}, 422, "messages.1.role"),
    ({"messages": [{"role": "user", "content": 5}]}, 422, "messages.0.content"),
    ({"messages": []}, 422, "messages"),
    ({"tool_choice": "required"}, 422, "tool_choice"),  # no tools
    ({"add_generation_prompt": "yes"}, 422, "add_generation_prompt"),
    ({"add_generation_prompt": False, "continue_from": {"token_ids": [1], "message_count": 1},
      "messages": [{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]}, 422, "continue_from"),
    ({"messages": [{"role": "user", "content": "word " * 40_000}]}, 422, "messages"),  # beyond the context
    ({"add_generation_prompt": False, "sampled_token_ids": [1, 2]}, 422, "sampled_token_ids"),
    ({"sampled_token_ids": ["x"]}, 422, "sampled_token_ids.0"),
    ({"model": "no-such-model"}, 404, "model"),
    ({"model": "ghost-run@3"}, 404, "model"),
])
def test_bad_requests_name_the_field(served, patch, status, field):
    r = served.client.post("/tokenize", json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}], **patch})
    assert r.status_code == status, r.text
    assert r.json()["field"] == field, r.json()
    assert r.json()["detail"]


def test_not_json_is_refused(served):
    r = served.client.post("/tokenize", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["field"] == "body"


def test_body_limit_and_loading(served):
    app = FastAPI()
    app.state.store, app.state.settings = served.store, EngineSettings(max_request_bytes=2048)
    app.include_router(router)
    with TestClient(app) as c:
        ok = c.post("/tokenize", json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]})
        assert ok.status_code == 200 and ok.json()["tokens"]
        r = c.post("/tokenize", json={"model": MODEL, "messages": [{"role": "user", "content": "x" * 4096}]})
        assert r.status_code == 413 and "2048" in r.json()["detail"]
    loading = FastAPI()
    loading.state.store = None
    loading.include_router(router)
    with TestClient(loading) as c:
        assert c.post("/tokenize", json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}).status_code == 503
