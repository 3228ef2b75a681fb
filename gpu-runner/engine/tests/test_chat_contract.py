"""The pydantic chat contract against its zod source (gpu-runner/contracts/chat.ts); no model needed.

Reading the zod file catches a field added or renamed on one side only.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from rollbook_engine.contracts import chat

CHAT_TS = (Path(__file__).resolve().parents[2] / "contracts" / "chat.ts").read_text()


def _zod_top_fields(name: str) -> set[str]:
    start = CHAT_TS.index(f"export const {name} = z.object({{")
    end = CHAT_TS.index("\n});", start)
    return set(re.findall(r"^  (\w+): z", CHAT_TS[start:end], re.M))


@pytest.mark.parametrize("name", ["ChatMessage", "ToolSpec", "ChatCompletionRequest", "ChatChoice",
                                  "ChatCompletionResponse", "EngineHealth", "ToolCall"])
def test_fields_match_zod(name):
    assert _zod_top_fields(name) == set(getattr(chat, name).model_fields)


def test_token_logprob_matches_zod():  # a one-line z.object in chat.ts
    line = re.search(r"export const TokenLogprob = z.object\(\{(.*)\}\);", CHAT_TS)
    assert set(re.findall(r"(\w+): z", line.group(1))) == set(chat.TokenLogprob.model_fields)


def test_defaults_and_bounds():
    req = chat.ChatCompletionRequest.model_validate(
        {"model": "m", "messages": [{"role": "user"}], "stop": "x", "extra_key": 1})
    assert req.messages[0].content == ""  # zod: .nullable().default("")
    for bad, field in [({"temperature": 2.5}, "temperature"), ({"top_p": 0}, "top_p"), ({"n": 257}, "n"),
                       ({"max_tokens": "5"}, "max_tokens"), ({"logprobs": "true"}, "logprobs"),
                       ({"messages": []}, "messages")]:
        with pytest.raises(ValidationError) as e:
            chat.ChatCompletionRequest.model_validate({"model": "m", "messages": [{"role": "user"}], **bad})
        assert e.value.errors()[0]["loc"][0] == field


def test_tool_call_type_defaults_to_function():
    msg = chat.ChatMessage.model_validate(
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]})
    assert msg.tool_calls[0].type == "function" and msg.content is None


def test_shared_chat_fixtures_parse_with_the_pydantic_models():
    # The same files gpu-runner/contracts/fixtures.test.ts parses with zod.
    import json
    from pathlib import Path

    from rollbook_engine.contracts.chat import ChatCompletionRequest, ChatCompletionResponse

    fixtures = Path(__file__).resolve().parents[2] / "contracts" / "fixtures"
    req = ChatCompletionRequest.model_validate(json.loads((fixtures / "chat_request.json").read_text()))
    assert req.return_token_ids is True and req.messages[2].tool_calls
    res = ChatCompletionResponse.model_validate(json.loads((fixtures / "chat_response.json").read_text()))
    assert res.choices[0].token_ids == [22815, 2]
    bad = json.loads((fixtures / "chat_request.json").read_text()) | {"max_tokens": "24"}
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        ChatCompletionRequest.model_validate(bad)
