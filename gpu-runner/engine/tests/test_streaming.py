"""The streamed reply, token by token (streaming.ChoiceStream) on the real SmolLM2 tokenizer with chosen
token sequences: it never sends half a UTF-8 character, never sends text a stop string or a tool call will
take back, and the chunks always assemble to the plain response's content, calls, logprobs and ids."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from rollbook_engine.backends.base import GenerationResult, SampledToken
from rollbook_engine.contracts.chat import ChatCompletionRequest
from rollbook_engine.model_loader import DEFAULT_MODEL, ensure_local
from rollbook_engine.prompt import Prompt
from rollbook_engine.responses import chat_response, final_reply
from rollbook_engine.streaming import ChoiceStream
from rollbook_engine.tool_formats import HermesFormat, Llama3JsonFormat, MistralFormat, MistralV11Format, Qwen3CoderFormat
from rollbook_engine.vocab import Vocab


@pytest.fixture(scope="module")
def tok():
    return AutoTokenizer.from_pretrained(ensure_local(DEFAULT_MODEL), local_files_only=True)


@pytest.fixture(scope="module")
def vocab(tok):
    return Vocab(tok)


def run(tok, vocab, text: str, *, stops=(), tools=None, prefill="", end_token=True, fmt=None, grammar=None,
        finish="stop", request_tools=None, params=None, **req_extra):
    """Feed `text`'s tokens one at a time as the backend would (ending the row where a stop string appears),
    and return (chunk choices, the final reply, the result). `grammar`: the prompt's (a forced call)."""
    req = ChatCompletionRequest.model_validate({"model": "m", "messages": [{"role": "user"}], "logprobs": True,
                                                "top_logprobs": 1, "return_token_ids": True, **req_extra,
                                                **({"tools": request_tools} if request_tools else {})})
    prompt = Prompt([1], prefill, tools, fmt or HermesFormat(), params or {}, grammar, grammar is not None)
    stream = ChoiceStream(0, req, prompt, vocab, tok, list(stops))
    ids = tok.encode(text, add_special_tokens=False) + ([tok.convert_tokens_to_ids("<|im_end|>")] if end_token else [])
    chunks, sampled, cut = [], [], None
    for tid in ids:
        sampled.append(tid)
        if (c := stream.add(SampledToken(tid, -0.5, [(tid, -0.5)]))) is not None:
            chunks.append(c)
        so_far = tok.decode(sampled, skip_special_tokens=True)
        hits = [so_far.find(s) for s in stops if s in so_far]
        if hits:
            cut = min(hits)
            break
    final_text = tok.decode(sampled, skip_special_tokens=True)
    result = GenerationResult(sampled, [-0.5] * len(sampled), final_text if cut is None else final_text[:cut], finish,
                              [[(t, -0.5)] for t in sampled])
    chunks += stream.finish(result)
    return chunks, final_reply(prompt, result), result


def assembled(chunks):
    content = "".join(c.delta.content or "" for c in chunks)
    calls = [tc for c in chunks for tc in (c.delta.tool_calls or [])]
    logprobs = [e for c in chunks if c.logprobs for e in c.logprobs.content]
    ids = [i for c in chunks for i in (c.token_ids or [])]
    return content, calls, logprobs, ids


def test_multibyte_characters_are_never_split(tok, vocab):
    text = "Grüße 你好 🤖 done"
    ids = tok.encode(text, add_special_tokens=False)
    assert len(ids) > len(text.split())  # some characters span several tokens: the case under test
    chunks, reply, result = run(tok, vocab, text)
    assert all("\ufffd" not in (c.delta.content or "") for c in chunks)
    content, _, logprobs, ids_out = assembled(chunks)
    assert content == reply.content == text
    assert ids_out == result.token_ids and len(logprobs) == len(result.token_ids)
    assert chunks[-1].finish_reason == "stop" and all(c.finish_reason is None for c in chunks[:-1])


def test_text_that_may_start_a_stop_string_is_held_back(tok, vocab):
    chunks, reply, _ = run(tok, vocab, "one two three END four five", stops=[" END"])
    content, *_ = assembled(chunks)
    assert reply.content == "one two three"
    assert content == "one two three"
    assert all("END" not in (c.delta.content or "") for c in chunks)


def test_one_chunk_per_token_with_or_without_tools(tok, vocab):
    for tools in (None, ["add"]):
        text = 'Sure.\n<tool_call>\n{"name": "add", "arguments": {"a": 2}}\n</tool_call>'
        chunks, _, result = run(tok, vocab, text, tools=tools)
        assert len(chunks) == len(result.token_ids) + 1  # + the finish chunk
        assert all(len(c.token_ids or []) == 1 for c in chunks[:-1]) and not chunks[-1].token_ids


TOOLS = ["add", "weather"]
WEATHER_ARGS = '{"city": "Par\\u00eds \\"x\\"", "days": 1e1, "more": {"a": [1, {"b": 2}]}}'
FORMATS = [
    (HermesFormat(), '<tool_call>\n{"name": "', "weather\", \"arguments\": " + WEATHER_ARGS + '}\n</tool_call>'),
    (Llama3JsonFormat(), '{"name": "', 'weather", "parameters": ' + WEATHER_ARGS + "}"),
    (MistralFormat(space=True), '[TOOL_CALLS] [{"name": "', 'weather", "arguments": ' + WEATHER_ARGS + "}]"),
]


@pytest.mark.parametrize("fmt,prefill,text", FORMATS)
def test_a_forced_call_streams_its_name_then_argument_fragments_one_chunk_per_token(tok, vocab, fmt, prefill, text):
    chunks, reply, result = run(tok, vocab, text, tools=TOOLS, prefill=prefill, fmt=fmt, grammar="(a forced call)")
    assert len(chunks) == len(result.token_ids) + 1
    deltas = [tc for c in chunks for tc in (c.delta.tool_calls or [])]
    assert deltas[0].id and deltas[0].id.startswith("call_") and deltas[0].function.name == "weather"
    assert all(d.index == 0 and d.id is None and d.function.name is None for d in deltas[1:])
    assert len(deltas) > 5  # fragments as the tokens come, not one lump
    [call] = reply.calls
    assert "".join(d.function.arguments or "" for d in deltas) == call.function.arguments == WEATHER_ARGS
    assert all(not c.delta.content for c in chunks)
    assert chunks[-1].finish_reason == "tool_calls"


# The formats whose forced call is not one JSON text as written: qwen3_coder's parameters (converted to the JSON
# parse() builds), Mistral v11's `name[ARGS]{json}`.
QWEN_PARAMS = {"weather": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}, "more": {"type": "object"}, "note": {}}}}
QWEN_TEXT = ('weather>\n<parameter=city>\nParís "x"\n  line 2 </para\n</parameter>\n<parameter=days>\n10\n</parameter>\n'
             '<parameter=more>\n{"a": [1, {"b": 2}]}\n</parameter>\n<parameter=note>\n\\ end\n</parameter>\n'
             '</function>\n</tool_call>')
XML_AND_V11 = [
    (Qwen3CoderFormat(), "<tool_call>\n<function=", QWEN_TEXT,
     json.dumps({"city": 'París "x"\n  line 2 </para', "days": 10, "more": {"a": [1, {"b": 2}]}, "note": "\\ end"},
                ensure_ascii=False)),
    (Qwen3CoderFormat(), "<tool_call>\n<function=", "weather>\n</function>\n</tool_call>", "{}"),
    (MistralV11Format(), "[TOOL_CALLS]", "weather[ARGS]" + WEATHER_ARGS, WEATHER_ARGS),
]


@pytest.mark.parametrize("fmt,prefill,text,arguments", XML_AND_V11)
def test_xml_and_mistral_v11_forced_calls_stream_their_arguments_as_written(tok, vocab, fmt, prefill, text, arguments):
    chunks, reply, result = run(tok, vocab, text, tools=TOOLS, prefill=prefill, fmt=fmt, grammar="(a forced call)",
                                params=QWEN_PARAMS)
    assert len(chunks) == len(result.token_ids) + 1
    [call] = reply.calls
    assert call.function.name == "weather" and call.function.arguments == arguments
    deltas = [tc for c in chunks for tc in (c.delta.tool_calls or [])]
    assert deltas[0].id and deltas[0].function.name == "weather"
    assert all(d.index == 0 and d.id is None and d.function.name is None for d in deltas[1:])
    # Fragments add up to the parsed call's arguments, and arrive while it is written (not in the last chunk).
    assert "".join(d.function.arguments or "" for d in deltas) == arguments
    if len(arguments) > 2:
        assert len(deltas) > 5
        last = chunks[-1].delta.tool_calls
        assert not last or len(last[0].function.arguments or "") <= 1
    assert all(not c.delta.content for c in chunks)
    assert chunks[-1].finish_reason == "tool_calls"


def test_a_named_qwen3_coder_call_streams_from_its_first_parameter(tok, vocab):
    text = "<parameter=a>\n7\n</parameter>\n<parameter=b>\nhello world\n</parameter>\n</function>\n</tool_call>"
    params = {"add": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}}
    chunks, reply, _ = run(tok, vocab, text, tools=TOOLS, prefill="<tool_call>\n<function=add>\n", fmt=Qwen3CoderFormat(),
                           grammar="(a forced call)", params=params,
                           request_tools=[{"type": "function", "function": {"name": "add"}}],
                           tool_choice={"type": "function", "function": {"name": "add"}})
    deltas = [tc for c in chunks for tc in (c.delta.tool_calls or [])]
    assert chunks[0].delta.tool_calls and deltas[0].function.name == "add"
    assert "".join(d.function.arguments or "" for d in deltas) == reply.calls[0].function.arguments == '{"a": 7, "b": "hello world"}'


def test_a_named_forced_call_streams_from_the_first_argument_token(tok, vocab):
    text = ' {"a": 1, "b": 2}}\n</tool_call>'
    chunks, reply, result = run(tok, vocab, text, tools=TOOLS, prefill='<tool_call>\n{"name": "add", "arguments":',
                                grammar="(a forced call)", request_tools=[{"type": "function", "function": {"name": "add"}}],
                                tool_choice={"type": "function", "function": {"name": "add"}})
    deltas = [tc for c in chunks for tc in (c.delta.tool_calls or [])]
    assert chunks[0].delta.tool_calls and deltas[0].function.name == "add"
    assert "".join(d.function.arguments or "" for d in deltas) == reply.calls[0].function.arguments == '{"a": 1, "b": 2}'
    assert len(chunks) == len(result.token_ids) + 1


def test_a_forced_call_cut_by_max_tokens_ends_with_length(tok, vocab):
    chunks, reply, _ = run(tok, vocab, 'weather", "arguments": {"city": "Pa', tools=TOOLS, end_token=False,
                           prefill='<tool_call>\n{"name": "', grammar="(a forced call)", finish="length")
    assert chunks[-1].finish_reason == reply.finish_reason == "length" and not reply.calls
    assert chunks[-1].malformed_tool_calls


def test_tool_calls_are_held_and_sent_whole_at_the_end(tok, vocab):
    text = 'Sure.\n<tool_call>\n{"name": "add", "arguments": {"a": 2}}\n</tool_call>'
    chunks, reply, _ = run(tok, vocab, text, tools=["add"])
    content, calls, logprobs, ids = assembled(chunks)
    assert all("<" not in (c.delta.content or "") for c in chunks)
    assert content == reply.content == "Sure."
    assert [(c.index, c.type, c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        (0, "function", "add", {"a": 2})]
    assert calls[0].id.startswith("call_")
    assert chunks[-1].finish_reason == "tool_calls"
    assert len(logprobs) == len(ids)


def test_a_prefilled_call_streams_nothing_early_and_a_malformed_one_is_reported(tok, vocab):
    chunks, reply, _ = run(tok, vocab, 'add", "arguments": {"a": }}\n</tool_call>', tools=["add"],
                           prefill='<tool_call>\n{"name": "')
    content, calls, *_ = assembled(chunks)
    assert calls == [] and content == reply.content == '<tool_call>\n{"name": "add", "arguments": {"a": }}\n</tool_call>'
    assert chunks[-1].finish_reason == "stop"
    assert chunks[-1].malformed_tool_calls and "invalid JSON" in chunks[-1].malformed_tool_calls[0].error
    # Only the final chunks carry text: nothing was sent while the call was being written.
    assert sum(1 for c in chunks if c.delta.content) == 1


@pytest.mark.parametrize("text", ["a < b and c <tool", "plain text  \n", "x <tool_call"])
def test_with_tools_the_stream_assembles_to_the_reply_whatever_the_text(tok, vocab, text):
    chunks, reply, _ = run(tok, vocab, text, tools=["add"], end_token=False)
    content, *_ = assembled(chunks)
    assert content == (reply.content or "")


def test_tokens_as_token_ids_name_each_sampled_id_streamed_and_whole(tok, vocab):
    """vLLM's return_tokens_as_token_ids, which OpenPipe ART parses to train on the exact sampled ids: every
    logprobs token (top ones too) reads "token_id:<id>", in the stream and in the whole reply; bytes stay real."""
    text = "Héllo wörld 😀"
    chunks, _, result = run(tok, vocab, text, return_tokens_as_token_ids=True)
    _, _, logprobs, ids = assembled(chunks)
    assert [e.token for e in logprobs] == [f"token_id:{i}" for i in ids] and ids == result.token_ids
    assert all(e.top_logprobs[0].token == e.token for e in logprobs)
    assert b"".join(bytes(e.bytes or []) for e in logprobs).decode("utf-8", "replace").startswith("Héllo")

    req = ChatCompletionRequest.model_validate({"model": "m", "messages": [{"role": "user"}], "logprobs": True,
                                                "top_logprobs": 1, "return_tokens_as_token_ids": True})
    whole = chat_response(req, Prompt([1], "", None), [result], vocab).choices[0].logprobs
    assert whole is not None and [e.token for e in whole.content] == [f"token_id:{i}" for i in result.token_ids]
    # Without the flag the tokens stay text.
    plain, _, _ = run(tok, vocab, text)
    assert not any(e.token.startswith("token_id:") for e in assembled(plain)[2])
