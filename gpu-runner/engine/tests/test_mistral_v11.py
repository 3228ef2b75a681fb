"""Mistral's v11 per-call spelling (`[TOOL_CALLS]name[ARGS]{…}`, tool_formats/mistral_v11.py) on a template written
for it (fixtures/tool_templates/mistral_v11.jinja) with the bundled SmolLM2 tokenizer: detected, rendered, parsed
(one and two calls, and as decoded when the markers are special tokens and dropped), the prefill at a token
boundary, a two-turn rollout token-exact, the grammar per tool_choice (the marker as its token id where it is
one), and on the real model every forced reply is a call to an offered tool with schema-valid arguments."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import llguidance
import pytest
from tokenizers import AddedToken
from transformers import AutoTokenizer

from rollbook_engine import chat_format, tool_formats
from rollbook_engine.backends.base import GenerationResult
from rollbook_engine.constrained import ll_tokenizer
from rollbook_engine.contracts.chat import ChatCompletionRequest, ChatMessage, NamedToolChoice, ToolSpec
from rollbook_engine.model_loader import DEFAULT_MODEL, ensure_local
from rollbook_engine.prompt import build_prompt
from rollbook_engine.responses import final_reply
from rollbook_engine.vocab import Vocab
from conftest import template_swapped

pytestmark = pytest.mark.conformance  # run against both backends (conftest.BACKEND)

MODEL = "SmolLM2-135M-Instruct"
TEMPLATE = (Path(__file__).with_name("fixtures") / "tool_templates" / "mistral_v11.jinja").read_text()
ADD = {"type": "function", "function": {"name": "add", "description": "Add two numbers", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer", "minimum": -99, "maximum": 99},
                                     "b": {"type": "integer", "minimum": -99, "maximum": 99}},
    "required": ["a", "b"], "additionalProperties": False}}}
MUL = {"type": "function", "function": {"name": "mul", "description": "Multiply two numbers", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer", "minimum": -99, "maximum": 99},
                                     "b": {"type": "integer", "minimum": -99, "maximum": 99}},
    "required": ["a", "b"], "additionalProperties": False}}}
TOOLS = [ADD, MUL]
FIRST = [{"role": "system", "content": "Use the tools."}, {"role": "user", "content": "What is 2+3, and 4*5?"}]
ONE = '[TOOL_CALLS]add[ARGS]{"a": 2, "b": 3}'
TWO = ONE + '[TOOL_CALLS]mul[ARGS]{"a": 4, "b": 5}'


def tokenizer(special_markers: bool = False):
    t = AutoTokenizer.from_pretrained(ensure_local(DEFAULT_MODEL), local_files_only=True)
    t.chat_template = TEMPLATE
    if special_markers:  # as in Mistral's own tokenizers (ids past SmolLM2's model: tokenizer-level tests only)
        t.add_tokens([AddedToken(m, special=True, normalized=False) for m in ("[TOOL_CALLS]", "[ARGS]", "[CALL_ID]")],
                     special_tokens=True)
    return t


@pytest.fixture(scope="module")
def tok():
    return tokenizer()


def end_id(t) -> int:
    return t.convert_tokens_to_ids("<|im_end|>")


def prompt_for(t, messages, **extra):
    req = ChatCompletionRequest.model_validate({"model": "m", "messages": messages, "tools": TOOLS, **extra})
    return build_prompt(t, Vocab(t), req, 8192, {end_id(t)})


def reply_of(t, prompt, sampled_text: str):
    ids = t.encode(sampled_text, add_special_tokens=False) + [end_id(t)]
    text = t.decode(ids, skip_special_tokens=True)  # what the engine decodes (special tokens dropped)
    return final_reply(prompt, GenerationResult(ids, [-0.5] * len(ids), text, "stop")), ids


def calls_of(reply) -> list[tuple[str, dict]]:
    return [(c.function.name, json.loads(c.function.arguments)) for c in reply.calls]


def test_detected_as_the_v11_spelling_of_mistral(tok):
    fmt = tool_formats.for_tokenizer(tok)
    assert isinstance(fmt, tool_formats.MistralV11Format) and fmt.name == "mistral" and fmt.special == {}
    v3 = tokenizer()
    v3.chat_template = (Path(__file__).with_name("fixtures") / "tool_templates" / "mistral.jinja").read_text()
    assert isinstance(tool_formats.for_tokenizer(v3), tool_formats.MistralFormat)


def test_one_and_two_calls_parse_and_render_back_as_sampled(tok):
    prompt = prompt_for(tok, FIRST)
    one, _ = reply_of(tok, prompt, ONE)
    assert calls_of(one) == [("add", {"a": 2, "b": 3})] and one.content is None and one.finish_reason == "tool_calls"
    two, _ = reply_of(tok, prompt, "Sure." + TWO)
    assert calls_of(two) == [("add", {"a": 2, "b": 3}), ("mul", {"a": 4, "b": 5})] and two.content == "Sure."
    assert all(len(c.id) == 9 and c.id.isalnum() for c in two.calls)
    with_id, _ = reply_of(tok, prompt, '[TOOL_CALLS]add[CALL_ID]a1b2c3d4e[ARGS]{"a": 2, "b": 3}')
    assert calls_of(with_id) == [("add", {"a": 2, "b": 3})]
    bad, _ = reply_of(tok, prompt, ONE.replace("add", "sub"))
    assert bad.calls == [] and "unknown tool 'sub'" in bad.malformed[0].error and bad.content == ONE.replace("add", "sub")
    broken, _ = reply_of(tok, prompt, '[TOOL_CALLS]add[ARGS]{"a": 2')
    assert broken.calls == [] and "invalid JSON" in broken.malformed[0].error
    prose, _ = reply_of(tok, prompt, "add them up: 5")
    assert prose.content == "add them up: 5" and prose.calls == [] and prose.malformed == []
    history = [ChatMessage.model_validate(m) for m in
               [*FIRST, {"role": "assistant", "content": None, "tool_calls": [c.model_dump() for c in two.calls]}]]
    text = chat_format.render(tok, history, [ToolSpec.model_validate(t) for t in TOOLS], generation_prompt=False)
    assert TWO + "<|im_end|>" in text


@pytest.mark.parametrize("choice", ["required", "named"])
def test_the_prefill_ends_at_a_token_boundary_and_a_two_turn_rollout_keeps_its_ids(tok, choice):
    tool_choice = {"type": "function", "function": {"name": "add"}} if choice == "named" else "required"
    plain = chat_format.render(tok, [ChatMessage.model_validate(m) for m in FIRST],
                               [ToolSpec.model_validate(t) for t in TOOLS], generation_prompt=True)
    p1 = prompt_for(tok, FIRST, tool_choice=tool_choice)
    assert ONE.startswith(p1.prefill)
    assert tok.encode(plain + ONE, add_special_tokens=False)[:len(p1.token_ids)] == p1.token_ids
    reply, sampled = reply_of(tok, p1, ONE[len(p1.prefill):])
    assert calls_of(reply) == [("add", {"a": 2, "b": 3})]
    prefix = p1.token_ids + sampled
    later = [*FIRST, {"role": "assistant", "content": None, "tool_calls": [c.model_dump() for c in reply.calls]},
             {"role": "tool", "tool_call_id": reply.calls[0].id, "content": "5"}]
    p2 = prompt_for(tok, later, continue_from={"token_ids": prefix, "message_count": 3})
    assert p2.token_ids[:len(prefix)] == prefix
    full = chat_format.render(tok, [ChatMessage.model_validate(m) for m in later],
                              [ToolSpec.model_validate(t) for t in TOOLS], generation_prompt=True)
    assert tok.decode(p2.token_ids) == full  # the parsed call re-renders exactly as sampled


def test_a_reply_whose_special_markers_were_dropped_in_decoding_is_read_as_its_calls():
    t = tokenizer(special_markers=True)
    fmt = tool_formats.for_tokenizer(t)
    assert set(fmt.special) == {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"}
    prompt = prompt_for(t, FIRST)
    two, ids = reply_of(t, prompt, TWO + " Done.")
    assert t.convert_tokens_to_ids("[ARGS]") in ids  # the markers were sampled as their tokens
    assert calls_of(two) == [("add", {"a": 2, "b": 3}), ("mul", {"a": 4, "b": 5})] and two.content == " Done."
    forced = prompt_for(t, FIRST, tool_choice="required")
    one, _ = reply_of(t, forced, ONE[len(forced.prefill):])  # the prefill's marker is text, the rest dropped
    assert calls_of(one) == [("add", {"a": 2, "b": 3})]
    assert fmt.parse("add them up", ["add"]).calls == [] and fmt.parse("{}", ["add"]).calls == []
    assert fmt.hold_from('add{"a"') == 0 and fmt.hold_from("Hello there") == len("Hello there")


def _accepts(t, lark: str, ids: list[int]) -> bool:
    m = llguidance.LLMatcher(ll_tokenizer(t, {end_id(t)}), llguidance.LLMatcher.grammar_from_lark(lark))
    assert not m.is_error(), m.get_error()
    return m.try_consume_tokens(ids) == len(ids) and m.is_accepting()


@pytest.mark.parametrize("special_markers", [False, True])
def test_the_grammar_takes_an_offered_call_with_valid_arguments_only(special_markers):
    t = tokenizer(special_markers)
    fmt = tool_formats.for_tokenizer(t)
    specs = [ToolSpec.model_validate(x) for x in TOOLS]
    named = NamedToolChoice.model_validate({"type": "function", "function": {"name": "add"}})
    for choice in ("required", named):
        prefill = fmt.prefill(choice)
        lark = fmt.call_grammar(choice, specs) or ""
        # The template's call, as the tokenizer splits it (with [ARGS] one token where it is one).
        ids = t.encode(ONE, add_special_tokens=False)[len(t.encode(prefill, add_special_tokens=False)):]
        assert _accepts(t, lark, ids), (choice, lark)
        assert not _accepts(t, lark, t.encode(ONE.replace('"b": 3', '"b": "3"')[len(prefill):], add_special_tokens=False))
    assert not _accepts(t, fmt.call_grammar("required", specs) or "",
                        t.encode(ONE.replace("add", "sub")[len("[TOOL_CALLS]"):], add_special_tokens=False))
    args_id = t.convert_tokens_to_ids("[ARGS]")
    assert (f"<[{args_id}]>" in (fmt.call_grammar("required", specs) or "")) is special_markers
    assert fmt.call_grammar("auto", specs) is None


@pytest.mark.parametrize("special_markers", [False, True])
def test_random_walks_through_the_grammar_parse_into_valid_calls_as_decoded(special_markers):
    """Any token sequence the grammar allows parses, from the text the engine decodes (special markers dropped),
    into a call to an offered tool with arguments in range: 60 walks uniform among the allowed tokens."""
    import random

    import numpy as np

    t = tokenizer(special_markers)
    fmt = tool_formats.for_tokenizer(t)
    specs = [ToolSpec.model_validate(x) for x in TOOLS]
    eos = end_id(t)
    for choice in ("required", NamedToolChoice.model_validate({"type": "function", "function": {"name": "mul"}})):
        lark = fmt.call_grammar(choice, specs) or ""
        for seed in range(30):
            rng = random.Random(seed)
            m = llguidance.LLMatcher(ll_tokenizer(t, {eos}), llguidance.LLMatcher.grammar_from_lark(lark))
            ids: list[int] = []
            while (token := rng.choice(np.nonzero(np.unpackbits(np.frombuffer(
                    m.compute_bitmask(), dtype=np.uint8), bitorder="little")[:len(t)])[0].tolist())) != eos:
                ids.append(token)
                assert m.consume_token(token) and len(ids) < 200
            text = fmt.prefill(choice) + t.decode(ids, skip_special_tokens=True)
            [call] = fmt.parse(text, ["add", "mul"]).calls
            args = json.loads(call.function.arguments)
            assert set(args) == {"a", "b"} and all(-99 <= v <= 99 for v in args.values()), (seed, text)


@pytest.fixture(scope="module")
def v11(served):
    """The served engine with the v11 test template (restored after this module)."""
    with template_swapped(served, TEMPLATE):
        yield served


def test_forced_calls_on_the_real_model_are_offered_tools_with_valid_arguments(v11):
    cases = [(s, "required") for s in range(10)] + [(s, {"type": "function", "function": {"name": "mul"}}) for s in range(3)]

    def ask(case):
        seed, choice = case
        return v11.client.post("/v1/chat/completions", json={
            "model": MODEL, "messages": FIRST, "tools": TOOLS, "tool_choice": choice, "max_tokens": 40,
            "temperature": 1.0, "seed": seed})

    # All at once: both backends batch concurrent requests, each with its own seed.
    with ThreadPoolExecutor(max_workers=len(cases)) as pool:
        replies = list(pool.map(ask, cases))
    for (seed, choice), r in zip(cases, replies):
        assert r.status_code == 200, r.text
        c = r.json()["choices"][0]
        assert c["finish_reason"] == "tool_calls" and not c.get("malformed_tool_calls"), (seed, c)
        [call] = c["message"]["tool_calls"]
        assert call["function"]["name"] in ({"add", "mul"} if choice == "required" else {"mul"})
        args = json.loads(call["function"]["arguments"])
        assert set(args) == {"a", "b"} and all(isinstance(v, int) and -99 <= v <= 99 for v in args.values()), c
    cut = v11.client.post("/v1/chat/completions", json={"model": MODEL, "messages": FIRST, "tools": TOOLS,
                                                        "tool_choice": "required", "max_tokens": 3}).json()["choices"][0]
    assert cut["finish_reason"] == "length" and not cut["message"].get("tool_calls")


def test_token_roles_see_each_calls_name_and_arguments_as_content_and_the_markers_as_scaffolding():
    from rollbook_engine.token_roles import content_chars
    from rollbook_engine.tool_formats.mistral_v11 import MistralV11Format

    text = "Sure.\n" + TWO
    parsed = MistralV11Format().parse(text, ["add", "mul"])
    assert [c.function.name for c in parsed.calls] == ["add", "mul"]
    roles = content_chars(text, parsed.spans)
    content = "".join(ch if is_content else "_" for ch, is_content in zip(text, roles))
    assert content == 'Sure.' + "_" * (1 + len("[TOOL_CALLS]")) + 'add' + "_" * len("[ARGS]") + '{"a": 2, "b": 3}' \
        + "_" * len("[TOOL_CALLS]") + 'mul' + "_" * len("[ARGS]") + '{"a": 4, "b": 5}'
