"""The pydantic chat contract against its zod source (contracts/chat.ts); no model needed.

The zod side is read through the JSON Schema zod emits (`z.toJSONSchema`, run by Node) and compared with the
pydantic models' JSON Schema field by field, bounds and defaults included (zod_contract.py, the check every
contract test shares). The shared fixtures are parsed here and by fixtures.test.ts.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from zod_contract import CONTRACTS, pydantic_schema, schema_problems, zod_schemas

from rollbook_engine.contracts import chat

FIXTURES = CONTRACTS / "fixtures"

# zod export → (pydantic model, side). Requests compare zod's input view (defaults make a field optional);
# responses its output view, where every field the engine always writes (pydantic default not None) counts.
PAIRS = {
    "ChatCompletionRequest": (chat.ChatCompletionRequest, "input"),
    "ChatCompletionResponse": (chat.ChatCompletionResponse, "output"),
    "ChatCompletionChunk": (chat.ChatCompletionChunk, "output"),
    "EngineHealth": (chat.EngineHealth, "output"),
}


@pytest.fixture(scope="module")
def zod() -> dict:
    return zod_schemas({"chat.ts": list(PAIRS)})["chat.ts"]


@pytest.mark.parametrize("name", list(PAIRS))
def test_pydantic_model_matches_the_zod_json_schema(zod, name):
    model, side = PAIRS[name]
    assert schema_problems(zod[name][side], pydantic_schema(model), side, name) == []


def test_the_comparison_catches_a_drifted_field(zod):
    # The check above must be able to fail: a model with a renamed field and a loosened bound does.
    class Drifted(chat.ChatCompletionRequest):
        top_k: int | None = None

    pyd = pydantic_schema(Drifted)
    pyd["properties"]["n"]["anyOf"][0]["maximum"] = 512
    problems = schema_problems(zod["ChatCompletionRequest"]["input"], pyd, "input", "req")
    assert any("top_k" in p for p in problems) and any("req.n: maximum" in p for p in problems)


def test_defaults_and_bounds():
    req = chat.ChatCompletionRequest.model_validate(
        {"model": "m", "messages": [{"role": "user"}], "stop": "x", "extra_key": 1})
    assert req.messages[0].content == ""  # zod: .nullable().default("")
    for bad, field in [({"temperature": 2.5}, "temperature"), ({"top_p": 0}, "top_p"), ({"n": 257}, "n"),
                       ({"max_tokens": "5"}, "max_tokens"), ({"logprobs": "true"}, "logprobs"),
                       ({"messages": []}, "messages"), ({"top_logprobs": 21, "logprobs": True}, "top_logprobs"),
                       ({"tool_choice": "sometimes"}, "tool_choice"), ({"max_completion_tokens": 0}, "max_completion_tokens")]:
        with pytest.raises(ValidationError) as e:
            chat.ChatCompletionRequest.model_validate({"model": "m", "messages": [{"role": "user"}], **bad})
        assert e.value.errors()[0]["loc"][0] == field


def test_rules_between_fields_name_the_field_at_fault():
    base = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    add = [{"type": "function", "function": {"name": "add"}}]
    cases = [
        ({"top_logprobs": 2}, "top_logprobs", "needs logprobs"),
        ({"tool_choice": "required"}, "tool_choice", "needs tools"),
        ({"tools": add, "tool_choice": {"type": "function", "function": {"name": "mul"}}}, "tool_choice", "mul"),
        ({"continue_from": {"token_ids": [1], "message_count": 1}}, "continue_from", "number of messages"),
    ]
    for extra, field, words in cases:
        with pytest.raises(ValidationError) as e:
            chat.ChatCompletionRequest.model_validate({**base, **extra})
        assert e.value.errors()[0]["loc"][0] == field and words in str(e.value)
    ok = chat.ChatCompletionRequest.model_validate({**base, "tools": add, "tool_choice": "none", "top_logprobs": 0})
    assert ok.completion_limit is None
    both = chat.ChatCompletionRequest.model_validate({**base, "max_tokens": 9, "max_completion_tokens": 4})
    assert both.completion_limit == 4


def test_tool_call_type_defaults_to_function():
    msg = chat.ChatMessage.model_validate(
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]})
    assert msg.tool_calls[0].type == "function" and msg.content is None


def test_dumps_drop_absent_optional_fields_but_keep_required_nulls():
    choice = chat.ChunkChoice(index=0, delta=chat.ChunkDelta(content="x"), finish_reason=None)
    assert choice.model_dump() == {"index": 0, "delta": {"content": "x"}, "finish_reason": None}


def test_shared_chat_fixtures_parse_with_the_pydantic_models():
    # The same files contracts/fixtures.test.ts parses with zod.
    req = chat.ChatCompletionRequest.model_validate(json.loads((FIXTURES / "chat_request.json").read_text()))
    assert req.return_token_ids is True and req.messages[2].tool_calls
    assert req.continue_from is not None and req.continue_from.message_count == 3
    assert req.tool_choice == "auto" and req.top_logprobs == 2 and req.stream_options.include_usage is True
    res = chat.ChatCompletionResponse.model_validate(json.loads((FIXTURES / "chat_response.json").read_text()))
    assert res.choices[0].token_ids == [22815, 2]
    assert res.choices[0].logprobs.content[0].top_logprobs[0].bytes == [97, 112, 112, 108, 101]
    assert res.choices[1].malformed_tool_calls[0].error.startswith("invalid JSON")
    assert res.choices[1].message.content is not None and res.choices[2].message.tool_calls
    chunks = [chat.ChatCompletionChunk.model_validate(c) for c in json.loads((FIXTURES / "chat_chunks.json").read_text())]
    assert chunks[0].choices[0].delta.role == "assistant" and chunks[-1].choices == [] and chunks[-1].usage
    bad = json.loads((FIXTURES / "chat_request.json").read_text()) | {"max_tokens": "24"}
    with pytest.raises(ValidationError):
        chat.ChatCompletionRequest.model_validate(bad)
