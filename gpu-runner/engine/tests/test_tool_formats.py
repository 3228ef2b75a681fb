"""Tool-call formats per family (tool_formats/), each on a chat template written for it (tests/fixtures/
tool_templates/, modelled on the family's own) with the bundled SmolLM2 tokenizer: the format is detected from
the template; a conversation with tools, a call and its result renders; a sampled reply with one and with two
calls parses; the tool_choice prefill ends where the format's call begins, at a token boundary; and a two-turn
rollout continued with continue_from keeps turn 1's prompt + sampled ids, the parsed call re-rendered in the
history changing none of them. No model needed: prompts are built by the engine's own build_prompt."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from rollbook_engine import chat_format, tool_formats
from rollbook_engine.backends.base import GenerationResult, SampledToken
from rollbook_engine.contracts.chat import ChatCompletionRequest, ChatMessage, ToolSpec
from rollbook_engine.model_loader import DEFAULT_MODEL, ensure_local
from rollbook_engine.prompt import build_prompt
from rollbook_engine.responses import final_reply
from rollbook_engine.streaming import ChoiceStream
from rollbook_engine.vocab import Vocab

pytestmark = pytest.mark.conformance  # run against both backends (conftest.BACKEND)

TEMPLATES = Path(__file__).with_name("fixtures") / "tool_templates"
ADD = {"type": "function", "function": {"name": "add", "description": "Add two numbers", "parameters": {
    "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}}
MUL = {"type": "function", "function": {"name": "mul", "description": "Multiply two numbers", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}}
FIRST = [{"role": "system", "content": "Use the tools."}, {"role": "user", "content": "What is 2+3, and 4*5?"}]


@dataclass
class Case:
    one: str  # a reply with one call to add(a=2, b=3), as the family's template writes it
    two: str  # a reply with add(a=2, b=3) and mul(a=4, b=5)
    roundtrip: bool = True  # the template re-renders the parsed call exactly as sampled (mistral adds the id)


CASES = {
    "hermes": Case(
        '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>',
        '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>\n'
        '<tool_call>\n{"name": "mul", "arguments": {"a": 4, "b": 5}}\n</tool_call>'),
    "qwen3_coder": Case(
        "<tool_call>\n<function=add>\n<parameter=a>\n2\n</parameter>\n<parameter=b>\n3\n</parameter>\n</function>\n"
        "</tool_call>",
        "<tool_call>\n<function=add>\n<parameter=a>\n2\n</parameter>\n<parameter=b>\n3\n</parameter>\n</function>\n"
        "</tool_call>\n<tool_call>\n<function=mul>\n<parameter=a>\n4\n</parameter>\n<parameter=b>\n5\n</parameter>\n"
        "</function>\n</tool_call>"),
    "llama3_json": Case(
        '{"name": "add", "parameters": {"a": 2, "b": 3}}',
        '{"name": "add", "parameters": {"a": 2, "b": 3}}; {"name": "mul", "parameters": {"a": 4, "b": 5}}'),
    "mistral": Case(
        '[TOOL_CALLS] [{"name": "add", "arguments": {"a": 2, "b": 3}}]',
        '[TOOL_CALLS] [{"name": "add", "arguments": {"a": 2, "b": 3}}, {"name": "mul", "arguments": {"a": 4, "b": 5}}]',
        roundtrip=False),
}


def load_tokenizer():
    return AutoTokenizer.from_pretrained(ensure_local(DEFAULT_MODEL), local_files_only=True)


@pytest.fixture(scope="module", params=list(CASES))
def family(request):
    tok = load_tokenizer()
    tok.chat_template = (TEMPLATES / f"{request.param}.jinja").read_text()
    return request.param, tok, CASES[request.param]


def req(messages, **extra) -> ChatCompletionRequest:
    return ChatCompletionRequest.model_validate({"model": "m", "messages": messages, "tools": [ADD, MUL], **extra})


def enc(tok, text: str) -> list[int]:
    return tok.encode(text, add_special_tokens=False)


def end_id(tok) -> int:
    return tok.convert_tokens_to_ids("<|im_end|>")


def prompt_for(tok, messages, **extra):
    return build_prompt(tok, Vocab(tok), req(messages, **extra), 8192, {end_id(tok)})


def reply_of(tok, prompt, sampled_text: str):
    """The engine's reply to `sampled_text` sampled after `prompt` (ending its turn)."""
    ids = enc(tok, sampled_text) + [end_id(tok)]
    return final_reply(prompt, GenerationResult(ids, [-0.5] * len(ids), sampled_text, "stop")), ids


def args(call) -> dict:
    return json.loads(call.function.arguments)


def test_each_template_is_detected_as_its_family(family):
    name, tok, _ = family
    assert chat_format.template_handles_tools(tok)
    assert tool_formats.for_tokenizer(tok).name == name


def test_smollm2_keeps_the_hermes_text_form():
    tok = load_tokenizer()
    assert not chat_format.template_handles_tools(tok) and tool_formats.for_tokenizer(tok).name == "hermes"


@pytest.mark.parametrize("template, name", [
    ("{{ tools }} [TOOL_CALLS] <tool_call>", "mistral"),
    ("{{ tools }} <tool_call>\n<function=x>", "qwen3_coder"),
    ("{{ tools }} <|python_tag|>", "llama3_json"),
    ("{% if tools %}\"parameters\"{% endif %} ipython", "llama3_json"),
    ("{{ tools }} <tool_call>", "hermes"),
    ("[TOOL_CALLS] without the word for them", "hermes"),  # no tools in the template: the Hermes text form
])
def test_detection_reads_what_only_that_family_writes(template, name):
    assert tool_formats.detect(template) == name


def test_the_template_renders_tools_a_call_and_its_result(family):
    name, tok, case = family
    one, _ = reply_of(tok, prompt_for(tok, FIRST), case.one)
    history = FIRST + [{"role": "assistant", "content": None, "tool_calls": [c.model_dump() for c in one.calls]},
                       {"role": "tool", "tool_call_id": one.calls[0].id, "content": "5"}]
    text = chat_format.render(tok, [ChatMessage.model_validate(m) for m in history],
                              [ToolSpec.model_validate(t) for t in (ADD, MUL)], generation_prompt=True)
    assert "Add two numbers" in text and "Multiply two numbers" in text  # the tools, as the template lists them
    assert "What is 2+3, and 4*5?" in text
    # (Mistral v0.3's template shows the system message only with a last user message, so not here.)
    assert text.count("Use the tools.") == (0 if name == "mistral" else 1)
    if case.roundtrip:
        assert case.one in text  # the parsed call, re-rendered as it was sampled
    else:  # mistral: the template adds the call's 9-character id, which the result refers to
        assert f'{case.one[:-2]}, "id": "{one.calls[0].id}"}}]' in text and f'"call_id": "{one.calls[0].id}"' in text
    assert "5" in text.split("Multiply two numbers")[-1].split(case.one[:12])[-1]


def test_one_and_two_sampled_calls_parse(family):
    name, tok, case = family
    prompt = prompt_for(tok, FIRST)
    one, _ = reply_of(tok, prompt, case.one)
    assert one.content is None and one.malformed == [] and one.finish_reason == "tool_calls"
    assert [(c.function.name, args(c)) for c in one.calls] == [("add", {"a": 2, "b": 3})]
    two, _ = reply_of(tok, prompt, case.two)
    assert [(c.function.name, args(c)) for c in two.calls] == [("add", {"a": 2, "b": 3}), ("mul", {"a": 4, "b": 5})]
    assert two.content is None and len({c.id for c in two.calls}) == 2
    if name == "mistral":  # its templates refuse any other id
        assert all(len(c.id) == 9 and c.id.isalnum() for c in two.calls)
    # A tool that was not offered is not a call: the text stays content and says why.
    bad, _ = reply_of(tok, prompt, case.one.replace("add", "sub"))
    assert bad.calls == [] and bad.content == case.one.replace("add", "sub")
    assert "unknown tool 'sub'" in bad.malformed[0].error
    # Plain prose is content, with nothing reported.
    prose, _ = reply_of(tok, prompt, "It is 5 and 20.")
    assert prose.content == "It is 5 and 20." and prose.calls == [] and prose.malformed == []


@pytest.mark.parametrize("choice", ["required", "named"])
def test_tool_choice_prefill_ends_where_the_call_begins(family, choice):
    _name, tok, case = family
    tool_choice = {"type": "function", "function": {"name": "add"}} if choice == "named" else "required"
    plain = chat_format.render(tok, [ChatMessage.model_validate(m) for m in FIRST],
                               [ToolSpec.model_validate(t) for t in (ADD, MUL)], generation_prompt=True)
    forced = prompt_for(tok, FIRST, tool_choice=tool_choice)
    prefill = forced.prefill
    assert prefill and case.one.startswith(prefill)
    if choice == "named":
        assert "add" in prefill
    # The prompt is the plain one + the prefill, split where the tokens of the prompt followed by the
    # template's whole call have a boundary, so the model continues from a split it has seen.
    whole = enc(tok, plain + case.one)
    assert whole[:len(forced.token_ids)] == forced.token_ids
    assert tok.decode(forced.token_ids).endswith(prefill)
    done, _ = reply_of(tok, forced, case.one[len(prefill):])
    assert [(c.function.name, args(c)) for c in done.calls] == [("add", {"a": 2, "b": 3})] and done.content is None
    assert tool_formats.for_tokenizer(tok).prefill("auto") == ""


@pytest.mark.parametrize("choice", ["auto", "required"])
def test_a_two_turn_rollout_keeps_turn_ones_prompt_and_sampled_ids(family, choice):
    _name, tok, case = family
    p1 = prompt_for(tok, FIRST, tool_choice=choice)
    reply, sampled = reply_of(tok, p1, case.two[len(p1.prefill):])
    assert len(reply.calls) == 2
    prefix = p1.token_ids + sampled
    later = FIRST + [
        {"role": "assistant", "content": reply.content, "tool_calls": [c.model_dump() for c in reply.calls]},
        {"role": "tool", "tool_call_id": reply.calls[0].id, "content": "5"},
        {"role": "tool", "tool_call_id": reply.calls[1].id, "content": "20"},
    ]
    p2 = prompt_for(tok, later, continue_from={"token_ids": prefix, "message_count": 3})
    assert p2.token_ids[:len(prefix)] == prefix
    # What follows is the template's text after the assistant turn's end-of-turn token (which was sampled).
    history = [ChatMessage.model_validate(m) for m in later]
    tools = [ToolSpec.model_validate(t) for t in (ADD, MUL)]
    head = chat_format.render(tok, history[:3], tools, generation_prompt=False)
    full = chat_format.render(tok, history, tools, generation_prompt=True)
    turn_end = head.rindex("<|im_end|>") + len("<|im_end|>")  # the assistant turn's end, which was sampled
    assert full.startswith(head) and "20" in full[turn_end:]
    assert p2.token_ids[len(prefix):] == enc(tok, full[turn_end:])
    if case.roundtrip:  # the parsed calls render back to the sampled text: the sequence reads as the template's
        assert tok.decode(p2.token_ids) == full


def test_a_stream_sends_no_call_text_as_content(family):
    _name, tok, case = family
    prompt = prompt_for(tok, FIRST)
    stream = ChoiceStream(0, req(FIRST), prompt, Vocab(tok), tok, [])
    ids = enc(tok, case.two) + [end_id(tok)]
    pieces = [c for t in ids if (c := stream.add(SampledToken(t, -0.5, []))) is not None]
    pieces += stream.finish(GenerationResult(ids, [-0.5] * len(ids), case.two, "stop"))
    assert "".join(p.delta.content or "" for p in pieces) == ""
    calls = [tc for p in pieces for tc in (p.delta.tool_calls or [])]
    assert [tc.function.name for tc in calls] == ["add", "mul"]


def test_qwen3_coder_reads_values_by_the_schema_type():
    fmt = tool_formats.Qwen3CoderFormat()
    schema = {"f": {"type": "object", "properties": {
        "s": {"type": "string"}, "i": {"type": "integer"}, "x": {"type": "number"}, "ok": {"type": "boolean"},
        "o": {"type": "object"}, "n": {"type": ["integer", "null"]}}}}

    def call(params: str):
        return fmt.parse(f"<tool_call>\n<function=f>\n{params}</function>\n</tool_call>", ["f"], schema)

    r = call("<parameter=s>\n42\n</parameter>\n<parameter=i>\n7\n</parameter>\n<parameter=x>\n2.5\n</parameter>\n"
             "<parameter=ok>\nTrue\n</parameter>\n<parameter=o>\n{\"k\": [1]}\n</parameter>\n"
             "<parameter=n>\nnull\n</parameter>\n<parameter=extra>\nfree text\n</parameter>\n")
    assert args(r.calls[0]) == {"s": "42", "i": 7, "x": 2.5, "ok": True, "o": {"k": [1]}, "n": None,
                                "extra": "free text"}
    assert "'i': 'seven' is not an integer" in call("<parameter=i>\nseven\n</parameter>\n").malformed[0].error
    assert "given twice" in call("<parameter=s>\na\n</parameter>\n<parameter=s>\nb\n</parameter>\n").malformed[0].error
    assert "text outside" in call("oops<parameter=s>\na\n</parameter>\n").malformed[0].error


def test_llama3_reads_the_python_tag_and_leaves_prose_after_calls_as_content():
    fmt = tool_formats.Llama3JsonFormat()
    r = fmt.parse('<|python_tag|>{"name": "add", "arguments": {"a": 1}}\nDone.', ["add"])
    assert args(r.calls[0]) == {"a": 1} and r.content == "Done."
    assert fmt.parse('Call {"name": "add", "parameters": {}}', ["add"]).calls == []  # only at the start
    broken = fmt.parse('{"name": "add", "parameters": {"a": 1}', ["add"])
    assert broken.calls == [] and "invalid JSON" in broken.malformed[0].error


def test_mistral_reads_a_call_list_whose_marker_token_was_dropped_in_decoding():
    # In Mistral's tokenizers [TOOL_CALLS] is a special token, and sampled text is decoded without those.
    special = tool_formats.MistralFormat(space=True, marker_is_special=True)
    r = special.parse('[{"name": "add", "arguments": {"a": 1}}]', ["add"])
    assert args(r.calls[0]) == {"a": 1} and r.content is None
    assert special.hold_from('[{"name"') == 0
    assert special.parse("[1, 2]", ["add"]).content == "[1, 2]"  # not a call: the text as it was decoded
    plain = tool_formats.MistralFormat(space=False)
    assert plain.parse('[{"name": "add", "arguments": {}}]', ["add"]).calls == []  # no marker, no call
    assert plain.prefill("required") == '[TOOL_CALLS][{"name": "'
    assert plain.parse('Sure.[TOOL_CALLS][{"name": "add", "arguments": {}}]', ["add"]).content == "Sure."


def test_health_names_the_detected_format(served):
    assert served.client.get("/health").json()["tool_format"] == "hermes"
