"""The pydantic chat contract against its zod source (contracts/chat.ts); no model needed.

The zod side is read through the JSON Schema zod emits (`z.toJSONSchema`, run by Node), not by regex over
its source: every object's fields, which are required, enum values and numeric bounds are compared with the
pydantic model's JSON Schema, recursively. The shared fixtures are parsed here and by fixtures.test.ts.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from rollbook_engine.contracts import chat

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "contracts" / "fixtures"
INT_RANGE = 9007199254740991  # zod's .int() bounds: no bound of the field's own

# zod export → (pydantic model, side). Requests compare zod's input view (defaults make a field optional);
# responses its output view, where every field the engine always writes (pydantic default not None) counts.
PAIRS = {
    "ChatCompletionRequest": (chat.ChatCompletionRequest, "input"),
    "ChatCompletionResponse": (chat.ChatCompletionResponse, "output"),
    "ChatCompletionChunk": (chat.ChatCompletionChunk, "output"),
    "EngineHealth": (chat.EngineHealth, "output"),
}

_EMIT = """
const m = await import(process.argv[1]);
const { z } = await import("zod");
const out = {};
for (const name of JSON.parse(process.argv[2]))
  out[name] = { input: z.toJSONSchema(m[name], { io: "input" }), output: z.toJSONSchema(m[name], { io: "output" }) };
process.stdout.write(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def zod_schemas() -> dict:
    node = shutil.which("node")
    if node is None or not (REPO / "node_modules" / "tsx").exists():
        pytest.fail("node and the repo's node_modules (tsx, zod) are needed to read the zod contract")
    out = subprocess.run(
        [node, "--import", "tsx", "--input-type=module", "-e", _EMIT,
         str(REPO / "contracts" / "chat.ts"), json.dumps(list(PAIRS))],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def _resolve(schema: dict, root: dict) -> dict:
    while "$ref" in schema:
        schema = root["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _variants(schema: dict, root: dict) -> list[dict]:
    """The non-null alternatives of a schema (pydantic writes X | None as anyOf, zod as type [X, "null"])."""
    schema = _resolve(schema, root)
    if "anyOf" in schema:
        return [v for alt in schema["anyOf"] for v in _variants(alt, root)]
    if isinstance(schema.get("type"), list):
        return [{**schema, "type": t} for t in schema["type"] if t != "null"]
    return [] if schema.get("type") == "null" else [schema]


def _kind(schema: dict) -> str:
    if "properties" in schema or schema.get("type") == "object":
        return "object"
    return schema.get("type", "any")


def _compare(z: dict, zroot: dict, p: dict, proot: dict, side: str, path: str, problems: list[str]) -> None:
    zs, ps = _variants(z, zroot), _variants(p, proot)
    if sorted(map(_kind, zs)) != sorted(map(_kind, ps)):
        problems.append(f"{path}: zod {sorted(map(_kind, zs))} vs pydantic {sorted(map(_kind, ps))}")
        return
    for zv in zs:
        pv = next(v for v in ps if _kind(v) == _kind(zv))
        if _kind(zv) == "object" and "properties" in zv:
            zprops, pprops = zv["properties"], pv.get("properties", {})
            if set(zprops) != set(pprops):
                problems.append(f"{path}: fields zod-only {set(zprops) - set(pprops)}, "
                                f"pydantic-only {set(pprops) - set(zprops)}")
            zreq = set(zv.get("required", []))
            preq = set(pv.get("required", []))
            if side == "output":
                preq |= {k for k, v in pprops.items() if v.get("default") is not None}
            if zreq != preq:
                problems.append(f"{path}: required zod {sorted(zreq)} vs pydantic {sorted(preq)}")
            for k in set(zprops) & set(pprops):
                _compare(zprops[k], zroot, pprops[k], proot, side, f"{path}.{k}", problems)
        elif _kind(zv) == "array":
            if zv.get("minItems") != pv.get("minItems"):
                problems.append(f"{path}: minItems zod {zv.get('minItems')} vs pydantic {pv.get('minItems')}")
            _compare(zv.get("items", {}), zroot, pv.get("items", {}), proot, side, f"{path}[]", problems)
        else:
            zenum = zv.get("enum", [zv["const"]] if "const" in zv else None)
            penum = pv.get("enum", [pv["const"]] if "const" in pv else None)
            if zenum is not None and sorted(zenum) != sorted(penum or []):
                problems.append(f"{path}: values zod {zenum} vs pydantic {penum}")
            for bound in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                zb = zv.get(bound)
                if zb is not None and abs(zb) == INT_RANGE:
                    zb = None
                if zb != pv.get(bound):
                    problems.append(f"{path}: {bound} zod {zb} vs pydantic {pv.get(bound)}")


@pytest.mark.parametrize("name", list(PAIRS))
def test_pydantic_model_matches_the_zod_json_schema(zod_schemas, name):
    model, side = PAIRS[name]
    zod = zod_schemas[name][side]
    pyd = model.model_json_schema()
    problems: list[str] = []
    _compare(zod, zod, pyd, pyd, side, name, problems)
    assert problems == []


def test_the_comparison_catches_a_drifted_field(zod_schemas):
    # The check above must be able to fail: a model with a renamed field and a loosened bound does.
    class Drifted(chat.ChatCompletionRequest):
        top_k: int | None = None

    problems: list[str] = []
    zod = zod_schemas["ChatCompletionRequest"]["input"]
    pyd = Drifted.model_json_schema()
    pyd["properties"]["n"]["anyOf"][0]["maximum"] = 512
    _compare(zod, zod, pyd, pyd, "input", "req", problems)
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
