"""The Hermes / Qwen2.5 tool format (tool_formats/hermes.py): rendering into a template without tool support, parsing
tool calls out of a reply (valid ones taken out, malformed ones kept and reported), and tool_choice prefill.
No model needed: rendering is checked against the real SmolLM2 tokenizer's template, text only."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from rollbook_engine import chat_format
from rollbook_engine.tool_formats import hermes as tool_calls
from rollbook_engine.contracts.chat import ChatMessage, NamedToolChoice, ToolSpec
from rollbook_engine.model_loader import DEFAULT_MODEL, ensure_local

ADD = ToolSpec.model_validate({"type": "function", "function": {
    "name": "add", "description": "Add two numbers",
    "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}})


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(ensure_local(DEFAULT_MODEL), local_files_only=True)


def msgs(*items: dict) -> list[ChatMessage]:
    return [ChatMessage.model_validate(m) for m in items]


def test_smollm2_template_has_no_tool_support(tokenizer):
    # The premise of this module: SmolLM2 gets the Hermes form, not native rendering.
    assert not chat_format.template_handles_tools(tokenizer)


def test_tools_history_and_results_render_as_qwen25_does(tokenizer):
    conversation = msgs(
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+3 and 4+5?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}},
            {"id": "c2", "function": {"name": "add", "arguments": '{"a": 4, "b": 5}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "5"},
        {"role": "tool", "tool_call_id": "c2", "content": "9"},
    )
    text = chat_format.render(tokenizer, conversation, [ADD], generation_prompt=True)
    spec = json.dumps(ADD.model_dump())
    assert text == (
        "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist with the user query."
        "\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" + spec +
        "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
        "<args-json-object>}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n2+3 and 4+5?<|im_end|>\n"
        '<|im_start|>assistant\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>\n'
        '<tool_call>\n{"name": "add", "arguments": {"a": 4, "b": 5}}\n</tool_call><|im_end|>\n'
        # consecutive tool results: one user turn, as Qwen2.5's template writes them
        "<|im_start|>user\n<tool_response>\n5\n</tool_response>\n<tool_response>\n9\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_assistant_content_comes_before_its_calls_and_no_tools_means_no_section(tokenizer):
    conversation = msgs({"role": "user", "content": "hi"},
                        {"role": "assistant", "content": "Let me add.", "tool_calls": [
                            {"id": "c1", "function": {"name": "add", "arguments": '{"a": 1}'}}]},
                        {"role": "tool", "content": "1"}, {"role": "user", "content": "thanks"})
    text = chat_format.render(tokenizer, conversation, None, generation_prompt=False)
    assert "<tools>" not in text  # tool_choice "none" / no tools: history still in tag form, no tool list
    assert 'assistant\nLet me add.\n<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call><|im_end|>' in text
    assert "<|im_start|>user\n<tool_response>\n1\n</tool_response><|im_end|>\n<|im_start|>user\nthanks" in text


def test_valid_calls_leave_the_content_with_openai_shape():
    r = tool_calls.parse('Sure.\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n'
                         '<tool_call>{"name": "add", "arguments": {}}</tool_call>', ["add"])
    assert r.content == "Sure."
    assert [c.function.name for c in r.calls] == ["add", "add"]
    assert json.loads(r.calls[0].function.arguments) == {"a": 1, "b": 2}
    assert all(c.id.startswith("call_") and c.type == "function" for c in r.calls)
    assert len({c.id for c in r.calls}) == 2 and r.malformed == []
    only = tool_calls.parse('<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>\n', ["add"])
    assert only.content is None and len(only.calls) == 1  # OpenAI: content null when the reply is only calls


@pytest.mark.parametrize("block, reason", [
    ('<tool_call>{"name": "add", "arguments": {"a": 1}</tool_call>', "invalid JSON"),
    ('<tool_call>{"arguments": {"a": 1}}</tool_call>', 'no function "name"'),
    ('<tool_call>{"name": "add", "arguments": "a=1"}</tool_call>', '"arguments" must be a JSON object'),
    ('<tool_call>{"name": "add", "arguments": [1, 2]}</tool_call>', '"arguments" must be a JSON object'),
    ('<tool_call>["add"]</tool_call>', "not a JSON object"),
    ('<tool_call>{"name": "mul", "arguments": {}}</tool_call>', "unknown tool 'mul'"),
    ('<tool_call>\n{"name": "add", "arguments": {"a": 1', "never closed"),
])
def test_malformed_calls_stay_in_the_content_and_say_why(block, reason):
    text = "Calling. " + block
    r = tool_calls.parse(text, ["add"])
    assert r.calls == [] and r.content == text
    assert len(r.malformed) == 1 and r.malformed[0].text == block and reason in r.malformed[0].error


def test_a_malformed_call_beside_a_valid_one():
    text = ('<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>'
            '<tool_call>{"name": add}</tool_call>')
    r = tool_calls.parse(text, ["add"])
    assert len(r.calls) == 1 and r.content == '<tool_call>{"name": add}</tool_call>'
    assert len(r.malformed) == 1


def test_prefill_for_tool_choice():
    assert tool_calls.prefill("required") == '<tool_call>\n{"name": "'
    named = NamedToolChoice.model_validate({"type": "function", "function": {"name": "add"}})
    assert tool_calls.prefill(named) == '<tool_call>\n{"name": "add", "arguments":'
    assert tool_calls.prefill("auto") == tool_calls.prefill(None) == ""
    # A prefill completed the way the template writes calls parses back into that call.
    done = tool_calls.parse(tool_calls.prefill(named) + ' {"a": 1}}\n</tool_call>', ["add"])
    assert done.calls[0].function.name == "add" and done.content is None
