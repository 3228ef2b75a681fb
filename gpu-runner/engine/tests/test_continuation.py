"""`continue_from` on the real engine: the earlier turns keep exactly the tokens given (what the model saw and
sampled), even where re-rendering and re-tokenising would give other ids, and only the new turns are
rendered and appended, as the template writes them."""

from __future__ import annotations

import pytest

from rollbook_engine import chat_format
from rollbook_engine.contracts.chat import ChatMessage

pytestmark = pytest.mark.conformance  # run against both backends (conftest.BACKEND)

MODEL = "SmolLM2-135M-Instruct"
ADD = {"type": "function", "function": {"name": "add", "description": "Add two numbers", "parameters": {
    "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}


def prompt_ids(served, messages, **extra) -> list[int]:
    r = served.client.post("/v1/chat/completions", json={
        "model": MODEL, "messages": messages, "max_tokens": 1, "temperature": 0, "return_token_ids": True, **extra})
    assert r.status_code == 200, r.text
    return r.json()["prompt_token_ids"]


def enc(served, text: str) -> list[int]:
    return served.store.tokenizer.encode(text, add_special_tokens=False)


def test_non_canonical_reply_tokens_come_back_unchanged(served):
    tok = served.store.tokenizer
    end = tok.convert_tokens_to_ids("<|im_end|>")
    first = [{"role": "user", "content": "Say hello."}]
    p1 = prompt_ids(served, first)
    sampled = enc(served, "He") + enc(served, "llo") + [end]
    assert enc(served, "Hello") != sampled[:-1]  # "He"+"llo" is not how "Hello" tokenises: the test means something
    prefix = p1 + sampled
    later = first + [{"role": "assistant", "content": "Hello"}, {"role": "user", "content": "And goodbye?"}]

    got = prompt_ids(served, later, continue_from={"token_ids": prefix, "message_count": 2})
    plain = prompt_ids(served, later)
    assert got[:len(prefix)] == prefix
    assert plain[:len(prefix)] != prefix  # plain re-rendering re-tokenises the reply
    # The appended part is what the template renders for the new turn (plain = p1 + "Hello" + <|im_end|> + new).
    new_turn = "\n<|im_start|>user\nAnd goodbye?<|im_end|>\n<|im_start|>assistant\n"
    assert got[len(prefix):] == enc(served, new_turn) == plain[len(p1) + len(enc(served, "Hello")) + 1:]


def test_hermes_tool_call_turn_and_tool_result_keep_the_sampled_tokens(served):
    end = served.store.tokenizer.convert_tokens_to_ids("<|im_end|>")
    first = [{"role": "user", "content": "What is 2+3?"}]
    p1 = prompt_ids(served, first, tools=[ADD])
    # The model wrote compact JSON (the template writes `{"name": "add", "arguments": {...}}` with spaces),
    # in pieces that are not the canonical tokenisation either.
    sampled = (enc(served, '<tool_call>\n{"name":"') + enc(served, "ad") + enc(served, "d")
               + enc(served, '","arguments":{"a":2,"b":3}}\n</tool_call>') + [end])
    prefix = p1 + sampled
    later = first + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "5"},
    ]
    got = prompt_ids(served, later, tools=[ADD], continue_from={"token_ids": prefix, "message_count": 2})
    plain = prompt_ids(served, later, tools=[ADD])
    assert got[:len(prefix)] == prefix
    assert plain[:len(prefix)] != prefix
    assert got[len(prefix):] == enc(served, "\n<|im_start|>user\n<tool_response>\n5\n</tool_response><|im_end|>\n"
                                            "<|im_start|>assistant\n")


def test_a_sampled_two_turn_rollout_reads_as_the_template_writes_it(served):
    """Real sampling: turn 2's prompt is turn 1's prompt + sampled ids + the new turn, and decodes to exactly
    the template's text of the whole conversation, so the runner stitches one token-exact sequence."""
    tok = served.store.tokenizer
    first = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Name a colour."}]
    r1 = served.client.post("/v1/chat/completions", json={
        "model": MODEL, "messages": first, "max_tokens": 12, "seed": 3, "temperature": 0.8, "return_token_ids": True})
    body1 = r1.json()
    choice = body1["choices"][0]
    prefix = body1["prompt_token_ids"] + choice["token_ids"]
    later = first + [{"role": "assistant", "content": choice["message"]["content"]},
                     {"role": "user", "content": "Another one?"}]
    got = prompt_ids(served, later, continue_from={"token_ids": prefix, "message_count": 3})
    assert got[:len(prefix)] == prefix
    expected_text = chat_format.render(tok, [ChatMessage.model_validate(m) for m in later], None, generation_prompt=True)
    assert tok.decode(got, skip_special_tokens=False) == expected_text


def test_a_forced_tool_call_continues_after_its_prefill(served):
    """tool_choice "required": the prefill is part of turn 1's prompt ids, never of its sampled ids; turn 2
    continues from prompt + sampled and keeps both."""
    r1 = served.client.post("/v1/chat/completions", json={
        "model": MODEL, "messages": [{"role": "user", "content": "Add 2 and 3."}], "tools": [ADD],
        "tool_choice": "required", "max_tokens": 24, "seed": 1, "temperature": 0, "return_token_ids": True})
    body1 = r1.json()
    c = body1["choices"][0]
    prefill = '<tool_call>\n{"name": "'
    assert served.store.tokenizer.decode(body1["prompt_token_ids"]).endswith("<|im_start|>assistant\n" + prefill)
    assert not served.store.tokenizer.decode(c["token_ids"]).startswith("<tool_call>")
    reply = {"role": "assistant", "content": c["message"]["content"], **(
        {"tool_calls": c["message"]["tool_calls"]} if c["message"].get("tool_calls") else {})}
    prefix = body1["prompt_token_ids"] + c["token_ids"]
    later = [{"role": "user", "content": "Add 2 and 3."}, reply, {"role": "user", "content": "Thanks."}]
    got = prompt_ids(served, later, tools=[ADD], continue_from={"token_ids": prefix, "message_count": 2})
    assert got[:len(prefix)] == prefix


@pytest.mark.parametrize("cont, param", [
    ({"token_ids": [1, 2], "message_count": 1}, "continue_from.message_count"),  # ends on the user turn
    ({"token_ids": [1, 2], "message_count": 3}, "continue_from.message_count"),  # nothing new after it
    ({"token_ids": [1, 10 ** 9], "message_count": 2}, "continue_from.token_ids"),  # outside the vocabulary
    ({"token_ids": [], "message_count": 2}, "continue_from.token_ids"),
    ({"token_ids": [1, -4], "message_count": 2}, "continue_from.token_ids"),
])
def test_bad_continue_from_is_400_naming_the_field(served, cont, param):
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                {"role": "user", "content": "bye"}]
    r = served.client.post("/v1/chat/completions", json={
        "model": MODEL, "messages": messages, "max_tokens": 1, "continue_from": cont})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"].startswith(param), r.json()  # e.g. continue_from.token_ids.1
