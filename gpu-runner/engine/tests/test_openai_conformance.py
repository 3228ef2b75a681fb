"""The official `openai` Python client against the real engine (SmolLM2-135M on CPU, uvicorn on a free port):
what an OpenAI user would write must work as it does against OpenAI. The Node client runs the same
checks in gpu-runner/src/engine/openai-conformance.servertest.ts."""

from __future__ import annotations

import json
import time

import openai
import pytest

pytestmark = pytest.mark.conformance  # run against both backends (conftest.BACKEND)

MODEL = "SmolLM2-135M-Instruct"
MSGS = [{"role": "user", "content": "Write one sentence about the sea."}]
ADD = {"type": "function", "function": {"name": "add", "description": "Add two numbers a and b", "parameters": {
    "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}}
# An agent conversation with one earlier call and its result: a 135M model asked zero-shot writes arguments
# as a list or copies the schema; with this history it writes well-formed calls (checked greedy).
TOOL_CHAT = [
    {"role": "user", "content": "What is 1 plus 2?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]},
    {"role": "tool", "tool_call_id": "call_0", "content": "3"},
    {"role": "assistant", "content": "1 plus 2 is 3."},
    {"role": "user", "content": "What is 4 plus 5?"},
]


@pytest.fixture(scope="module")
def client(served):
    return openai.OpenAI(base_url=served.url + "/v1", api_key="not-needed", max_retries=0, timeout=300)


def assemble(chunks):
    """Choices of a stream, by index: content, tool calls, logprobs, finish reason."""
    out: dict[int, dict] = {}
    for chunk in chunks:
        for c in chunk.choices:
            got = out.setdefault(c.index, {"role": None, "content": "", "tool_calls": [], "logprobs": [], "finish": None})
            got["role"] = got["role"] or c.delta.role
            got["content"] += c.delta.content or ""
            got["tool_calls"] += c.delta.tool_calls or []
            got["logprobs"] += (c.logprobs.content or []) if c.logprobs else []
            if c.finish_reason is not None:
                assert got["finish"] is None, "finish_reason sent twice"
                got["finish"] = c.finish_reason
    return out


def test_plain_completion(client):
    r = client.chat.completions.create(model=MODEL, messages=MSGS, max_tokens=8, seed=1)
    assert r.object == "chat.completion" and r.model == MODEL and r.id.startswith("chatcmpl-")
    c = r.choices[0]
    assert c.index == 0 and c.message.role == "assistant" and isinstance(c.message.content, str) and c.message.content
    assert c.finish_reason in ("stop", "length")
    assert r.usage.completion_tokens <= 8 and r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_stream_assembles_to_the_plain_response_with_usage_last(client):
    kw = dict(model=MODEL, messages=MSGS, max_tokens=12, seed=7, temperature=1.0, logprobs=True, top_logprobs=2)
    plain = client.chat.completions.create(**kw)
    chunks = list(client.chat.completions.create(**kw, stream=True, stream_options={"include_usage": True}))
    got = assemble(chunks)[0]
    assert got["role"] == "assistant"
    assert got["content"] == plain.choices[0].message.content
    assert got["finish"] == plain.choices[0].finish_reason
    assert [(e.token, e.logprob) for e in got["logprobs"]] == [(e.token, e.logprob) for e in plain.choices[0].logprobs.content]
    assert len(chunks) > 3  # token by token, not one lump
    assert chunks[-1].choices == [] and chunks[-1].usage == plain.usage
    assert all(ch.usage is None for ch in chunks[:-1])


def test_stream_helper_of_the_client_accumulates_our_chunks(client):
    kw = dict(model=MODEL, messages=MSGS, max_tokens=10, seed=11)
    plain = client.chat.completions.create(**kw)
    with client.chat.completions.stream(**kw) as stream:
        deltas = [e.delta for e in stream if e.type == "content.delta"]
        snapshot = stream.current_completion_snapshot  # get_final_completion() refuses "length" replies
    assert "".join(deltas) == snapshot.choices[0].message.content == plain.choices[0].message.content
    assert snapshot.choices[0].finish_reason == plain.choices[0].finish_reason


def test_logprobs_and_top_logprobs(client):
    r = client.chat.completions.create(model=MODEL, messages=MSGS, max_tokens=6, temperature=0, logprobs=True,
                                       top_logprobs=5)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    for e in content:
        assert e.logprob <= 0 and len(e.top_logprobs) == 5
        tops = [t.logprob for t in e.top_logprobs]
        assert tops == sorted(tops, reverse=True) and tops[0] >= e.logprob
        assert e.top_logprobs[0].token == e.token  # greedy: the chosen token is the most likely one
        assert e.bytes is not None and all(isinstance(b, int) and 0 <= b < 256 for b in e.bytes)
    text = bytes(b for e in content for b in e.bytes).decode("utf-8", errors="replace")
    assert text.startswith(r.choices[0].message.content)  # the bytes spell the reply (special tokens after it)


def test_tokens_as_token_ids_name_the_sampled_ids_streamed_and_whole(client):
    """vLLM's return_tokens_as_token_ids, which ART parses to train on the exact sampled ids, over HTTP on the
    backend under test: every logprobs token (top ones too) reads "token_id:<id>" of the ids it sampled, one
    per streamed chunk, the same in the whole reply."""
    kw = dict(model=MODEL, messages=MSGS, max_tokens=8, seed=5, temperature=1.0, logprobs=True, top_logprobs=2,
              extra_body={"return_tokens_as_token_ids": True, "return_token_ids": True})
    plain = client.chat.completions.create(**kw)
    ids = plain.choices[0].model_extra["token_ids"]
    content = plain.choices[0].logprobs.content
    assert ids and [e.token for e in content] == [f"token_id:{i}" for i in ids]
    assert all(e.top_logprobs and all(t.token.startswith("token_id:") for t in e.top_logprobs) for e in content)
    chunks = list(client.chat.completions.create(**kw, stream=True))
    streamed = [e for ch in chunks for c in ch.choices if c.logprobs for e in c.logprobs.content or []]
    assert [(e.token, e.logprob) for e in streamed] == [(e.token, e.logprob) for e in content]
    assert sum(1 for ch in chunks for c in ch.choices if c.logprobs and c.logprobs.content) == len(ids)


def test_forced_tool_call_is_parsed_into_tool_calls(client):
    r = client.chat.completions.create(
        model=MODEL, messages=TOOL_CHAT, tools=[ADD], tool_choice={"type": "function", "function": {"name": "add"}},
        max_tokens=24, temperature=0)
    c = r.choices[0]
    assert c.finish_reason == "tool_calls", c
    assert c.message.content is None
    call = c.message.tool_calls[0]
    assert call.type == "function" and call.id.startswith("call_") and call.function.name == "add"
    assert json.loads(call.function.arguments) == {"a": 4, "b": 5}


def test_required_tool_choice_streams_its_call_as_the_plain_response_parses_it(client):
    kw = dict(model=MODEL, messages=TOOL_CHAT, tools=[ADD], tool_choice="required", max_tokens=24, temperature=0)
    plain = client.chat.completions.create(**kw).choices[0]
    chunks = list(client.chat.completions.create(**kw, stream=True))
    got = assemble(chunks)[0]
    assert plain.finish_reason == "tool_calls" and plain.message.tool_calls[0].function.name == "add"
    assert got["finish"] == plain.finish_reason
    assert got["content"] == (plain.message.content or "")
    # OpenAI's incremental deltas: the first names the call (index, id, type, name), the rest add arguments.
    first, *more = got["tool_calls"]
    assert (first.index, first.type, first.function.name) == (0, "function", plain.message.tool_calls[0].function.name)
    assert first.id.startswith("call_") and all(d.id is None and d.function.name is None for d in more) and more
    assert "".join(d.function.arguments or "" for d in got["tool_calls"]) == plain.message.tool_calls[0].function.arguments


def test_a_call_cut_by_max_tokens_comes_back_as_text_and_is_reported(client):
    # Zero-shot the model once wrote `"arguments": [2, 3]`; constrained decoding now makes that a valid call,
    # so the malformed path is a call max_tokens cut: returned as content, listed, finish_reason "length".
    r = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "What is 7 plus 8?"}], tools=[ADD],
        tool_choice={"type": "function", "function": {"name": "add"}}, max_tokens=3, temperature=0)
    c = r.choices[0]
    malformed = c.model_extra["malformed_tool_calls"]
    assert c.message.tool_calls is None and c.finish_reason == "length"
    assert malformed and malformed[0]["text"] in c.message.content and malformed[0]["error"]


def test_n_choices_and_seed_reproduce(client):
    kw = dict(model=MODEL, messages=MSGS, max_tokens=8, seed=5, n=2, temperature=1.0)
    a = client.chat.completions.create(**kw)
    b = client.chat.completions.create(**kw)
    assert [c.index for c in a.choices] == [0, 1]
    assert [c.message.content for c in a.choices] == [c.message.content for c in b.choices]
    streamed = assemble(client.chat.completions.create(**kw, stream=True))
    assert [streamed[i]["content"] for i in (0, 1)] == [c.message.content for c in a.choices]
    others = {client.chat.completions.create(**{**kw, "n": 1, "seed": s}).choices[0].message.content for s in (100, 200, 300)}
    assert len(others | {a.choices[0].message.content}) > 1  # the seed matters


def test_stop_cuts_the_reply_streamed_or_not(client):
    full = client.chat.completions.create(model=MODEL, messages=MSGS, max_tokens=16, temperature=0).choices[0].message.content
    words = full.split()
    assert len(words) >= 3, full
    stop = " " + words[2]
    kw = dict(model=MODEL, messages=MSGS, max_tokens=16, temperature=0, stop=[stop])
    cut = client.chat.completions.create(**kw).choices[0]
    assert cut.finish_reason == "stop" and cut.message.content == full[: full.index(stop)]
    streamed = assemble(client.chat.completions.create(**kw, stream=True))[0]
    assert streamed["content"] == cut.message.content and streamed["finish"] == "stop"


def test_an_over_long_prompt_is_a_bad_request_at_once(client):
    t0 = time.perf_counter()
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "word " * 200_000}])
    assert time.perf_counter() - t0 < 5
    assert err.value.param == "messages" and "context" in err.value.message
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model=MODEL, messages=MSGS, top_logprobs=3)  # needs logprobs
    assert err.value.param == "top_logprobs"
