"""tool_choice "required" / a named function in the qwen3_coder (XML) format, constrained (xml_grammar.py): on the
real engine (SmolLM2-135M, untrained for this format) with the Qwen3-Coder test template, every reply is a call
to an offered tool whose parameters match its schema (names from `properties`, required ones present, values
typed), and a call cut by max_tokens says "length"; and the grammar itself, on the spellings the template and
vLLM's parser use, and on a tokenizer where `<tool_call>` / `</tool_call>` are added tokens."""

from __future__ import annotations

import json
from pathlib import Path

import llguidance
import pytest
from pydantic import ValidationError
from tokenizers import AddedToken
from transformers import AutoTokenizer

from rollbook_engine import chat_format, tool_formats
from rollbook_engine.constrained import ll_tokenizer
from rollbook_engine.contracts.chat import ChatCompletionRequest, ChatMessage, NamedToolChoice, ToolSpec
from rollbook_engine.errors import RequestError
from rollbook_engine.model_loader import DEFAULT_MODEL, ensure_local
from rollbook_engine.prompt import build_prompt
from rollbook_engine.vocab import Vocab
from conftest import template_swapped

pytestmark = pytest.mark.conformance  # run against both backends (conftest.BACKEND)

MODEL = "SmolLM2-135M-Instruct"
TEMPLATE = (Path(__file__).with_name("fixtures") / "tool_templates" / "qwen3_coder.jinja").read_text()
# Every value kind the grammar spells: raw strings (bounded, enum), integers (bounded), a nullable integer,
# booleans, numbers, arrays. Bounds keep an untrained model's values finite within max_tokens.
WEATHER = {"type": "function", "function": {"name": "weather", "description": "Weather in a city", "parameters": {
    "type": "object", "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 30},
        "unit": {"type": "string", "enum": ["C", "F"]},
        "days": {"type": ["integer", "null"], "minimum": 1, "maximum": 14},
        "hourly": {"type": "boolean"}},
    "required": ["city", "unit"], "additionalProperties": False}}}
ADD = {"type": "function", "function": {"name": "add", "description": "Add two numbers a and b", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer", "minimum": -999, "maximum": 999},
                                     "b": {"type": "integer", "minimum": -999, "maximum": 999}},
    "required": ["a", "b"], "additionalProperties": False}}}
TAG = {"type": "function", "function": {"name": "tag", "description": "Tag a note", "parameters": {
    "type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 1, "maxItems": 2},
        "weight": {"type": "number", "minimum": 0, "maximum": 1}},
    "required": ["tags"]}}}
TOOLS = [WEATHER, ADD, TAG]
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
# For a test that needs several names sampled: after ASK the grammar's first token is "weather" with 97% of the
# allowed mass (SmolLM2, measured), so 20 seeds name only "weather" 55% of the time — the transformers backend's
# seeds happened to pass, vLLM's did not. After this one: weather 38%, add 53%, tag 9%.
ANY_TOOL = [{"role": "user", "content": "Use a tool."}]


def schema_errors(schema: dict, value, path: str = "$") -> list[str]:
    """What in `value` breaks `schema`, for the keywords the tools above use (jsonschema is not in the engine's
    venv): type (with null), enum, min/maxLength, minimum/maximum, items, min/maxItems, required, properties,
    additionalProperties false."""
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds] if kinds else []
    checks = {"string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
              "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
              "array": lambda v: isinstance(v, list), "object": lambda v: isinstance(v, dict),
              "null": lambda v: v is None}
    if kinds and not any(checks[k](value) for k in kinds):
        return [f"{path}: {value!r} is not {kinds}"]
    errors = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not in {schema['enum']}")
    if isinstance(value, str) and not schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", 10**9):
        errors.append(f"{path}: length {len(value)}")
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and not schema.get("minimum", -10**18) <= value <= schema.get("maximum", 10**18):
        errors.append(f"{path}: {value} out of range")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", 10**9):
            errors.append(f"{path}: {len(value)} items")
        errors += [e for i, v in enumerate(value) for e in schema_errors(schema.get("items", {}), v, f"{path}[{i}]")]
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errors += [f"{path}: missing {k}" for k in schema.get("required", []) if k not in value]
        if schema.get("additionalProperties") is False:
            errors += [f"{path}: unknown {k}" for k in value if k not in props]
        errors += [e for k, v in value.items() if k in props for e in schema_errors(props[k], v, f"{path}.{k}")]
    return errors


@pytest.fixture(scope="module")
def coder(served):
    """The served engine with the Qwen3-Coder test template (restored after this module)."""
    with template_swapped(served, TEMPLATE):
        yield served


def chat(served, **body):
    r = served.client.post("/v1/chat/completions", json={"model": MODEL, "messages": ASK, "tools": TOOLS, **body})
    assert r.status_code == 200, r.text
    return r.json()


def assert_valid_call(c: dict, names: set[str]) -> tuple[str, dict]:
    assert c["finish_reason"] == "tool_calls", c
    assert not c.get("malformed_tool_calls"), c
    [call] = c["message"]["tool_calls"]
    by_name = {t["function"]["name"]: t for t in TOOLS}
    name = call["function"]["name"]
    assert name in names, call
    args = json.loads(call["function"]["arguments"])
    assert schema_errors(by_name[name]["function"]["parameters"], args) == [], (call, args)
    return name, args


def test_the_engine_serves_the_qwen3_coder_format(coder):
    assert coder.client.get("/health").json()["tool_format"] == "qwen3_coder"


def test_required_always_calls_an_offered_tool_with_schema_valid_parameters(coder):
    from concurrent.futures import ThreadPoolExecutor

    seen_names, seen_keys = set(), set()
    # The 20 seeds at once: the engine batches concurrent requests (each keeps its own seed), ~4x faster than
    # one after another on CPU.
    with ThreadPoolExecutor(max_workers=20) as pool:
        replies = list(pool.map(lambda seed: chat(coder, messages=ANY_TOOL, tool_choice="required", max_tokens=160,
                                                  temperature=1.0, seed=seed), range(20)))
    for r in replies:
        name, args = assert_valid_call(r["choices"][0], {"weather", "add", "tag"})
        seen_names.add(name)
        seen_keys |= {f"{name}.{k}" for k in args}
    # Sampled at temperature 1 by a model that never saw this format: the grammar, not luck, holds each seed.
    assert len(seen_names) >= 2, seen_names
    assert seen_keys & {"weather.days", "weather.hourly", "tag.weight"}, seen_keys  # optional ones too


def test_named_choice_calls_that_tool(coder):
    for seed in range(6):
        c = chat(coder, tool_choice={"type": "function", "function": {"name": "add"}}, max_tokens=60,
                 temperature=1.0, seed=seed)["choices"][0]
        _name, args = assert_valid_call(c, {"add"})
        assert set(args) == {"a", "b"}


def test_max_tokens_inside_a_forced_call_says_length_and_returns_no_call(coder):
    for choice in ("required", {"type": "function", "function": {"name": "weather"}}):
        c = chat(coder, tool_choice=choice, max_tokens=5, temperature=0)["choices"][0]
        assert c["finish_reason"] == "length", c
        assert not c["message"].get("tool_calls"), c
        assert "never closed" in c["malformed_tool_calls"][0]["error"], c
        r = coder.client.post("/v1/chat/completions", json={"model": MODEL, "messages": ASK, "tools": TOOLS,
                                                            "tool_choice": choice, "max_tokens": 5, "stream": True})
        events = [json.loads(line[6:]) for line in r.text.splitlines()
                  if line.startswith("data: ") and line != "data: [DONE]"]
        assert [ch["finish_reason"] for e in events for ch in e["choices"] if ch.get("finish_reason")] == ["length"]


def test_a_forced_stream_sends_one_chunk_per_token_and_the_call_as_it_is_written(coder):
    body = {"tool_choice": "required", "max_tokens": 160, "temperature": 1.0, "seed": 5}
    plain = chat(coder, **body)["choices"][0]
    r = coder.client.post("/v1/chat/completions", json={"model": MODEL, "messages": ASK, "tools": TOOLS, **body,
                                                        "stream": True, "stream_options": {"include_usage": True}})
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ") and line != "data: [DONE]"]
    choices = [e["choices"][0] for e in events[:-1]]
    assert len(choices) == events[-1]["usage"]["completion_tokens"] + 2  # role, one per token, finish
    assert "".join(ch["delta"].get("content") or "" for ch in choices) == ""  # no call text leaks as content
    deltas = [d for ch in choices for d in ch["delta"].get("tool_calls") or []]
    mine = plain["message"]["tool_calls"][0]["function"]
    assert deltas[0]["function"]["name"] == mine["name"] and all("name" not in d["function"] for d in deltas[1:])
    assert "".join(d["function"].get("arguments") or "" for d in deltas) == mine["arguments"]
    assert len(deltas) > 2  # the header, then the arguments in fragments as the parameters are written
    assert choices[-1]["finish_reason"] == "tool_calls"


# ---- the grammar, without the model -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tok():
    t = AutoTokenizer.from_pretrained(ensure_local(DEFAULT_MODEL), local_files_only=True)
    t.chat_template = TEMPLATE
    return t


def _specs() -> list[ToolSpec]:
    return [ToolSpec.model_validate(t) for t in TOOLS]


def _named(name: str) -> NamedToolChoice:
    return NamedToolChoice.model_validate({"type": "function", "function": {"name": name}})


def accepts(tokenizer, lark: str, text: str, ids: list[int] | None = None) -> bool:
    """Whether the grammar takes exactly `text` (as `tokenizer` splits it, or `ids`) and is then complete."""
    m = llguidance.LLMatcher(ll_tokenizer(tokenizer, {tokenizer.eos_token_id}), llguidance.LLMatcher.grammar_from_lark(lark))
    assert not m.is_error(), m.get_error()
    ids = ids if ids is not None else tokenizer.encode(text, add_special_tokens=False)
    return m.try_consume_tokens(ids) == len(ids) and m.is_accepting()


def template_call(tok, name: str, args: dict) -> str:
    """The call as the template writes it in an assistant turn (the spelling the model reads in its history)."""
    call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    msgs = [ChatMessage.model_validate(m) for m in [*ASK, {"role": "assistant", "content": None, "tool_calls": [call]}]]
    text = chat_format.render(tok, msgs, _specs(), generation_prompt=False)
    return text[text.rindex("<tool_call>"):text.rindex("</tool_call>") + len("</tool_call>")]


@pytest.mark.parametrize("name,args", [
    ("weather", {"city": "Paris", "unit": "C"}),
    ("weather", {"city": "New York\nNY", "unit": "F", "days": 3, "hourly": True}),  # the template writes True
    ("add", {"a": -2, "b": 40}),
    ("tag", {"tags": ["x", "y z"], "weight": 0.25}),
])
def test_the_grammar_takes_the_templates_own_spelling_of_a_call(tok, name, args):
    fmt = tool_formats.for_tokenizer(tok)
    assert fmt.name == "qwen3_coder"
    call = template_call(tok, name, args)
    for choice in ("required", _named(name)):
        prefill = fmt.prefill(choice)
        assert call.startswith(prefill)
        lark = fmt.call_grammar(choice, _specs())
        assert lark is not None and accepts(tok, lark, call[len(prefill):]), (choice, call)
    parsed = fmt.parse(call, ["weather", "add", "tag"], {t.function.name: t.function.parameters for t in _specs()})
    assert [(c.function.name, json.loads(c.function.arguments)) for c in parsed.calls] == [(name, args)]


def test_a_nullable_value_is_null_as_the_parsers_read_it(tok):
    # The template writes None as Python's `None`, which neither vLLM's parser nor this engine's reads as null.
    fmt = tool_formats.for_tokenizer(tok)
    lark = fmt.call_grammar("required", _specs()) or ""
    call = "weather>\n<parameter=city>\nOslo\n</parameter>\n<parameter=unit>\nC\n</parameter>\n<parameter=days>\n{}\n</parameter>\n</function>\n</tool_call>"
    assert accepts(tok, lark, call.format("null")) and not accepts(tok, lark, call.format("None"))
    parsed = fmt.parse(fmt.prefill("required") + call.format("null"), ["weather"], {"weather": WEATHER["function"]["parameters"]})
    assert json.loads(parsed.calls[0].function.arguments) == {"city": "Oslo", "unit": "C", "days": None}


def test_random_walks_through_the_grammar_all_parse_into_schema_valid_calls(tok):
    """Any token sequence the grammar allows, up to the end of the turn, parses into a schema-valid call: 300
    walks that pick uniformly among the allowed tokens at each step (stranger text than any model writes)."""
    import random

    import numpy as np

    fmt = tool_formats.for_tokenizer(tok)
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    params = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    by_name = {t["function"]["name"]: t for t in TOOLS}
    for choice in ("required", _named("weather"), _named("tag")):
        lark = fmt.call_grammar(choice, _specs()) or ""
        for seed in range(100):
            rng = random.Random(seed)
            m = llguidance.LLMatcher(ll_tokenizer(tok, {eos}), llguidance.LLMatcher.grammar_from_lark(lark))
            ids: list[int] = []
            for _ in range(400):
                bits = np.unpackbits(np.frombuffer(m.compute_bitmask(), dtype=np.uint8), bitorder="little")
                token = rng.choice(np.nonzero(bits[:len(tok)])[0].tolist())
                if token == eos:
                    break
                ids.append(token)
                assert m.consume_token(token)
            else:
                pytest.fail(f"walk {seed} did not end")
            text = fmt.prefill(choice) + tok.decode(ids)
            parsed = fmt.parse(text, list(by_name), params)
            assert parsed.malformed == [] and len(parsed.calls) == 1, (seed, text, parsed)
            call = parsed.calls[0].function
            assert schema_errors(params[call.name], json.loads(call.arguments)) == [], (seed, text)


@pytest.mark.parametrize("rest", [
    "weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=unit>\nK\n</parameter>\n</function>\n</tool_call>",
    "weather>\n<parameter=unit>\nC\n</parameter>\n</function>\n</tool_call>",  # city is required
    "weather>\n<parameter=city>\nnull\n</parameter>\n<parameter=unit>\nC\n</parameter>\n</function>\n</tool_call>",
    "weather>\n<parameter=city>\na</parameter>b\n</parameter>\n<parameter=unit>\nC\n</parameter>\n</function>\n</tool_call>",
    "weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=unit>\nC\n</parameter>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>",
    "add>\n<parameter=a>\n2.5\n</parameter>\n<parameter=b>\n1\n</parameter>\n</function>\n</tool_call>",
    "add>\n<parameter=a>\n1000\n</parameter>\n<parameter=b>\n1\n</parameter>\n</function>\n</tool_call>",
    'add>\n<parameter=a>\n"1"\n</parameter>\n<parameter=b>\n1\n</parameter>\n</function>\n</tool_call>',
    "sub>\n</function>\n</tool_call>",
    "tag>\n<parameter=tags>\n[]\n</parameter>\n</function>\n</tool_call>",
    "add>\n<parameter=a>\n1\n</parameter>\n<parameter=b>\n2\n</parameter>\n</function>\n</tool_call> more",
])
def test_the_grammar_refuses_what_is_not_a_schema_valid_call(tok, rest):
    assert not accepts(tok, tool_formats.for_tokenizer(tok).call_grammar("required", _specs()) or "", rest)


def test_string_keywords_and_names_the_tags_cannot_hold():
    fmt = tool_formats.Qwen3CoderFormat()

    def tool(props, required=(), name="f"):
        return [ToolSpec.model_validate({"type": "function", "function": {"name": name, "parameters": {
            "type": "object", "properties": props, "required": list(required)}}})]

    tokz = AutoTokenizer.from_pretrained(ensure_local(DEFAULT_MODEL), local_files_only=True)
    lark = fmt.call_grammar(_named("f"), tool({"code": {"type": "string", "pattern": "^[A-Z]{3}$"},
                                               "any": {"anyOf": [{"type": "integer"}, {"type": "string"}]}},
                                              ["code"]))
    assert lark is not None

    def ok(text: str) -> bool:
        return accepts(tokz, lark, text + "</function>\n</tool_call>")

    assert ok("<parameter=code>\nABC\n</parameter>\n")
    assert not ok("<parameter=code>\nABCD\n</parameter>\n") and not ok("<parameter=code>\nab\n</parameter>\n")
    assert ok("<parameter=code>\nXYZ\n</parameter>\n<parameter=any>\nfree text\n</parameter>\n")  # read as a string
    # A tool name the tags cannot hold ("a>b") no longer reaches the format: the shared grammar of tool names
    # (contracts/identifiers.json) refuses it in the request itself, a 400 naming tools.N.function.name.
    with pytest.raises(ValidationError, match="a tool name is"):
        tool({}, name="a>b")
    with pytest.raises(RequestError):
        fmt.call_grammar("required", tool({"x>y": {"type": "string"}}, ["x>y"]))
    assert fmt.call_grammar("auto", _specs()) is None and fmt.call_grammar(None, _specs()) is None


@pytest.mark.parametrize("special", [False, True])
def test_markers_that_are_added_tokens_are_constrained_as_those_tokens(special):
    """In Qwen's tokenizers `<tool_call>` / `</tool_call>` are added tokens (not special: decoding keeps them).
    llguidance matches literal text with ordinary tokens only, so the grammar writes such a marker as its token
    id: the model closes the call with the one token it was trained on, the one re-tokenising the turn gives. A
    special one is dropped from the decoded text the reply is parsed from, so it stays text."""
    t = AutoTokenizer.from_pretrained(ensure_local(DEFAULT_MODEL), local_files_only=True)
    t.add_tokens([AddedToken(m, special=special, normalized=False) for m in ("<tool_call>", "</tool_call>")],
                 special_tokens=special)
    t.chat_template = TEMPLATE
    close_id = t.convert_tokens_to_ids("</tool_call>")
    fmt = tool_formats.for_tokenizer(t)
    assert ("</tool_call>" in fmt.tokens) is not special
    rest = "add>\n<parameter=a>\n1\n</parameter>\n<parameter=b>\n2\n</parameter>\n</function>\n</tool_call>"
    ids = t.encode(rest, add_special_tokens=False)
    assert ids[-1] == close_id  # the tokenizer splits the marker out as its one token
    for f in (fmt, tool_formats.HermesFormat()):
        f.tokens = fmt.tokens
    lark = fmt.call_grammar("required", _specs()) or ""
    assert accepts(t, lark, rest, ids) is not special
    hermes = tool_formats.HermesFormat()
    hermes.tokens = fmt.tokens
    h_rest = 'add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    assert accepts(t, hermes.call_grammar("required", _specs()) or "", h_rest) is not special
    assert (f"<[{close_id}]>" in lark) is not special
    if not special:  # decoding keeps the marker: the sampled ids parse back into the call
        text = t.decode(ids, skip_special_tokens=True)
        assert fmt.parse(fmt.prefill("required") + text, ["add"], {"add": ADD["function"]["parameters"]}).calls


def test_build_prompt_carries_the_grammar_llguidance_and_vllm_take(tok):
    """The grammar a qwen3_coder prompt carries (GenerationRequest.grammar, which the vLLM backend hands to its
    guided decoding as is: test_vllm_args.py) compiles against the tokenizer."""
    req = ChatCompletionRequest.model_validate({"model": "m", "messages": ASK, "tools": TOOLS, "tool_choice": "required"})
    prompt = build_prompt(tok, Vocab(tok), req, 8192, {tok.convert_tokens_to_ids("<|im_end|>")})
    assert prompt.prefill == "<tool_call>\n<function=" and prompt.grammar is not None
    assert prompt.grammar == tool_formats.Qwen3CoderFormat().call_grammar("required", _specs())
    assert "<parameter=city>" in prompt.grammar
