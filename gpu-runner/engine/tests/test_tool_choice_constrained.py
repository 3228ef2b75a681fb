"""tool_choice "required" / a named function on the real engine (SmolLM2-135M, Hermes format): constrained
decoding (constrained.py) makes every reply a call to an offered tool with arguments matching its schema, a
call cut by max_tokens says "length" and is not returned as a call, and the grammar text per JSON format
(qwen3_coder's XML calls: test_tool_choice_qwen3_coder.py; Mistral's v11 spelling: test_mistral_v11.py)."""

from __future__ import annotations

import functools
import json
from concurrent.futures import ThreadPoolExecutor

import llguidance
import pytest
import torch

from rollbook_engine.contracts.chat import NamedToolChoice, ToolSpec
from rollbook_engine.tool_formats import HermesFormat, Llama3JsonFormat, MistralFormat

pytestmark = pytest.mark.conformance  # run against both backends (conftest.BACKEND)

MODEL = "SmolLM2-135M-Instruct"
WEATHER = {"type": "function", "function": {"name": "weather", "description": "Weather in a city", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "maxLength": 40},
                                     "unit": {"type": "string", "enum": ["C", "F"]}},
    "required": ["city", "unit"], "additionalProperties": False}}}
ADD = {"type": "function", "function": {"name": "add", "description": "Add two numbers a and b", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"], "additionalProperties": False}}}
TOOLS = [WEATHER, ADD]
# Zero-shot, where the unconstrained model wrote names never offered (`weather.cile`) and lists as arguments.
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def valid_args(tool: dict, args: dict) -> bool:
    """The arguments against the two schemas above, by hand (jsonschema is not in the engine's venv)."""
    params = tool["function"]["parameters"]
    props = params["properties"]
    if set(args) - set(props) or not set(params["required"]) <= set(args):
        return False
    for key, value in args.items():
        spec = props[key]
        if spec["type"] == "integer" and not (isinstance(value, int) and not isinstance(value, bool)):
            return False
        if spec["type"] == "string" and not (isinstance(value, str) and len(value) <= spec.get("maxLength", 10**9)
                                             and value in spec.get("enum", [value])):
            return False
    return True


def chat(served, **body):
    r = served.client.post("/v1/chat/completions", json={"model": MODEL, "messages": ASK, "tools": TOOLS, **body})
    assert r.status_code == 200, r.text
    return r.json()


def test_required_always_calls_an_offered_tool_with_valid_arguments(served):
    by_name = {t["function"]["name"]: t for t in TOOLS}
    names = set()
    # The 20 seeds at once (both backends batch concurrent requests, each keeps its own seed): 84 s one after
    # another on vLLM's CPU build.
    with ThreadPoolExecutor(max_workers=20) as pool:
        replies = list(pool.map(lambda seed: chat(served, tool_choice="required", max_tokens=80, temperature=1.0,
                                                  seed=seed), range(20)))
    for seed, reply in enumerate(replies):
        c = reply["choices"][0]
        assert c["finish_reason"] == "tool_calls", (seed, c)
        calls = c["message"]["tool_calls"]
        assert calls and not c.get("malformed_tool_calls"), (seed, c)
        for call in calls:
            name = call["function"]["name"]
            assert name in by_name, (seed, call)
            assert valid_args(by_name[name], json.loads(call["function"]["arguments"])), (seed, call)
            names.add(name)
    assert names  # sampled at temperature 1: the constraint, not luck, holds every seed


def test_constrained_rows_share_a_batch_with_free_ones(served):
    """Forced and unconstrained requests sampled together (one batch, rows joining and leaving): each forced
    row follows its own grammar, the free rows are untouched."""
    from concurrent.futures import ThreadPoolExecutor

    bodies = [dict(tool_choice="required", max_tokens=80, temperature=1.0, seed=40 + k, n=2) for k in range(2)]
    bodies += [dict(max_tokens=12 + 20 * k, temperature=1.0, seed=50 + k) for k in range(2)]
    named = dict(tool_choice={"type": "function", "function": {"name": "add"}}, max_tokens=40, temperature=1.0, seed=7)
    with ThreadPoolExecutor(len(bodies) + 1) as pool:
        replies = list(pool.map(lambda b: chat(served, **b), [*bodies, named]))
    for reply in replies[:2]:
        for c in reply["choices"]:
            assert c["finish_reason"] == "tool_calls" and c["message"]["tool_calls"][0]["function"]["name"] in {"weather", "add"}, c
    for reply in replies[2:4]:
        assert reply["choices"][0]["finish_reason"] in ("stop", "length", "tool_calls")
    [call] = replies[4]["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "add" and valid_args(ADD, json.loads(call["function"]["arguments"]))


def test_named_choice_calls_that_tool(served):
    for seed in range(5):
        c = chat(served, tool_choice={"type": "function", "function": {"name": "add"}}, max_tokens=40,
                 temperature=1.0, seed=seed)["choices"][0]
        assert c["finish_reason"] == "tool_calls", c
        [call] = c["message"]["tool_calls"]
        assert call["function"]["name"] == "add"
        assert valid_args(ADD, json.loads(call["function"]["arguments"])), call


def test_logprobs_stay_raw_for_forced_tokens(served):
    """The grammar masks what is sampled, not what is reported: logprobs are the raw model's (a forced token
    can be unlikely), the same numbers the trainer recomputes."""
    for extra in (dict(temperature=0), dict(temperature=1.0, seed=3)):
        body = dict(tool_choice="required", max_tokens=60, logprobs=True, top_logprobs=3, return_token_ids=True, **extra)
        reply = chat(served, **body)
        c = reply["choices"][0]
        lps = [e["logprob"] for e in c["logprobs"]["content"]]
        assert len(lps) == len(c["token_ids"]) and all(lp <= 0 for lp in lps)
        assert min(lps) < -0.05  # not renormalised over the allowed tokens (which would make forced tokens 0.0)
        # Exactly the model's own numbers: a forward pass over prompt + reply (vLLM reports logprobs after its
        # grammar mask, so its backend re-scores a constrained row: this is what fails if it does not).
        prompt, ids = reply["prompt_token_ids"], c["token_ids"]
        with torch.inference_mode(), served.store.use_adapter(None) as model:
            logits = model(input_ids=torch.tensor([prompt + ids])).logits[0, len(prompt) - 1:-1].float()
        want = torch.log_softmax(logits, -1)
        assert torch.allclose(torch.tensor(lps), want.gather(1, torch.tensor(ids)[:, None])[:, 0], atol=2e-3), extra
        for pos, entry in enumerate(c["logprobs"]["content"]):  # the top 3 of the raw distribution, in order
            top = torch.topk(want[pos], 3)
            assert [t["logprob"] for t in entry["top_logprobs"]] == pytest.approx(top.values.tolist(), abs=2e-3)


def test_max_tokens_inside_a_forced_call_says_length_and_returns_no_call(served):
    for choice in ("required", {"type": "function", "function": {"name": "weather"}}):
        for stream in (False, True):
            body = dict(tool_choice=choice, max_tokens=4, temperature=0)
            if stream:
                r = served.client.post("/v1/chat/completions", json={"model": MODEL, "messages": ASK, "tools": TOOLS,
                                                                      "stream": True, **body})
                events = [json.loads(line[6:]) for line in r.text.splitlines()
                          if line.startswith("data: ") and line != "data: [DONE]"]
                finishes = [c["finish_reason"] for e in events for c in e["choices"] if c.get("finish_reason")]
                assert finishes == ["length"], events
                continue
            c = chat(served, **body)["choices"][0]
            assert c["finish_reason"] == "length", c
            assert not c["message"].get("tool_calls"), c
            assert c["malformed_tool_calls"] and "never closed" in c["malformed_tool_calls"][0]["error"], c


def test_a_forced_stream_sends_one_chunk_per_token_and_its_arguments_in_fragments(served):
    body = {"model": MODEL, "messages": ASK, "tools": TOOLS, "tool_choice": "required", "max_tokens": 80,
            "temperature": 1.0, "seed": 3, "stream": True, "stream_options": {"include_usage": True}}
    r = served.client.post("/v1/chat/completions", json=body)
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ") and line != "data: [DONE]"]
    plain = chat(served, **{k: v for k, v in body.items() if k not in ("model", "messages", "tools", "stream",
                                                                      "stream_options")})["choices"][0]
    usage = events[-1]["usage"]
    choices = [e["choices"][0] for e in events[:-1]]
    assert len(choices) == usage["completion_tokens"] + 2  # the role chunk, one per token, the finish chunk
    deltas = [d for c in choices for d in c["delta"].get("tool_calls", [])]
    assert deltas[0]["function"]["name"] == plain["message"]["tool_calls"][0]["function"]["name"]
    args = "".join(d["function"].get("arguments", "") for d in deltas)
    assert args == plain["message"]["tool_calls"][0]["function"]["arguments"]
    assert len(deltas) > 3 and choices[-1]["finish_reason"] == "tool_calls"


def test_a_schema_llguidance_cannot_compile_is_a_400_naming_tools(served):
    bad = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "x": {"type": "string", "pattern": "(unclosed"}}, "required": ["x"]}}}
    r = served.client.post("/v1/chat/completions", json={"model": MODEL, "messages": ASK, "tools": [bad],
                                                         "tool_choice": "required", "max_tokens": 4})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "tools"


def _tools() -> list[ToolSpec]:
    return [ToolSpec.model_validate(t) for t in TOOLS]


@pytest.mark.parametrize("fmt,call", [
    (HermesFormat(), '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'),
    (Llama3JsonFormat(), '{"name": "add", "parameters": {"a": 1, "b": 2}}'),
    (MistralFormat(space=True), '[TOOL_CALLS] [{"name": "add", "arguments": {"a": 1, "b": 2}}]'),
])
def test_each_json_format_grammar_accepts_its_own_call_and_refuses_an_unoffered_name(fmt, call):
    """The grammar after each format's prefill matches the call its parser reads, for "required" and named,
    and nothing with another name or an argument of the wrong type."""
    tools = _tools()
    named = NamedToolChoice.model_validate({"type": "function", "function": {"name": "add"}})
    for choice in ("required", named):
        prefill = fmt.prefill(choice)
        assert call.startswith(prefill)
        lark = fmt.call_grammar(choice, tools)
        assert lark is not None
        assert fmt.parse(call, ["weather", "add"]).calls  # the spelling really is a call in that format
        assert _matches(lark, call[len(prefill):])
        assert not _matches(lark, call[len(prefill):].replace('"b": 2', '"b": "2"'))
    rest = fmt.prefill("required")
    assert not _matches(fmt.call_grammar("required", tools) or "", call.replace("add", "sub")[len(rest):])
    assert fmt.call_grammar("auto", tools) is None and fmt.call_grammar(None, tools) is None


@functools.cache
def _tokenizers():
    import llguidance.hf
    from transformers import AutoTokenizer

    from rollbook_engine.model_loader import DEFAULT_MODEL, ensure_local

    tok = AutoTokenizer.from_pretrained(ensure_local(DEFAULT_MODEL))
    return tok, llguidance.hf.from_tokenizer(tok)


def _matches(lark: str, text: str) -> bool:
    """Whether the grammar accepts exactly `text` (as the bundled tokenizer splits it) and is then complete."""
    tok, ll_tok = _tokenizers()
    m = llguidance.LLMatcher(ll_tok, llguidance.LLMatcher.grammar_from_lark(lark))
    assert not m.is_error(), m.get_error()
    ids = tok.encode(text, add_special_tokens=False)
    return m.try_consume_tokens(ids) == len(ids) and m.is_accepting()
