"""The inference side on the real SmolLM2-135M-Instruct (CPU), through a real uvicorn server in a thread.

The session's served engine keeps this fast; max_tokens stays small because the machine is shared.
"""

from __future__ import annotations

import asyncio
import math

import httpx
import pytest
import torch

from rollbook_engine.model_store import ModelStore

from conftest import BACKEND, own_run, write_lora_checkpoint

pytestmark = pytest.mark.conformance  # run against both backends (conftest.BACKEND)

MSGS = [{"role": "user", "content": "Write a short poem about the sea."}]
WORKSPACE = "ws-inference"


@pytest.fixture(scope="module")
def engine(served):
    """The session's served engine (one engine start less: ~40 s with vLLM) with a checkpoint of run1's."""
    write_lora_checkpoint(served.store, served.store.checkpoint_dir("run1", 1))
    own_run(served.store, "run1", WORKSPACE)
    return served.client, served.store


def chat(client, **body):
    body = {"model": "SmolLM2-135M-Instruct", "messages": MSGS, "max_tokens": 12, **body}
    # As the runner sends it: the workspace the call acts for (run1's checkpoints serve only that one).
    return client.post("/v1/chat/completions", json=body, headers={"x-rollbook-workspace": WORKSPACE})


def test_completion_tokens_text_and_logprobs(engine):
    client, store = engine
    r = chat(client, logprobs=True, return_token_ids=True, seed=1)
    assert r.status_code == 200, r.text
    body = r.json()
    choice = body["choices"][0]
    ids = choice["token_ids"]
    assert ids and store.tokenizer.decode(ids, skip_special_tokens=True) == choice["message"]["content"]
    lps = [x["logprob"] for x in choice["logprobs"]["content"]]
    assert len(lps) == len(ids)
    assert all(math.isfinite(x) and x <= 0 for x in lps)
    assert choice["finish_reason"] in ("stop", "length")
    assert body["usage"]["completion_tokens"] == len(ids)
    assert body["usage"]["prompt_tokens"] == len(body["prompt_token_ids"])


def test_prompt_token_ids_match_chat_template(engine):
    client, store = engine
    body = chat(client, max_tokens=1, return_token_ids=True).json()
    expected = store.tokenizer.apply_chat_template(MSGS, add_generation_prompt=True, tokenize=True, return_dict=False)
    assert body["prompt_token_ids"] == list(expected)


def test_logprobs_are_raw_model_logprobs(engine):
    """The reported logprob is log_softmax of the raw logits (temperature 1), whatever the sampling temperature."""
    client, store = engine
    body = chat(client, max_tokens=4, temperature=0.5, top_p=0.9, seed=3, logprobs=True, return_token_ids=True).json()
    ids = body["prompt_token_ids"] + body["choices"][0]["token_ids"]
    n = len(body["choices"][0]["token_ids"])
    with torch.no_grad(), store.use_adapter(None) as model:
        logits = model(input_ids=torch.tensor([ids])).logits[0, -n - 1:-1].float()
    expected = torch.log_softmax(logits, -1).gather(1, torch.tensor(ids[-n:])[:, None])[:, 0]
    got = torch.tensor([x["logprob"] for x in body["choices"][0]["logprobs"]["content"]])
    assert torch.allclose(got, expected, atol=1e-3)


def test_same_seed_same_output(engine):
    client, _ = engine
    a = chat(client, seed=42, temperature=1.0, return_token_ids=True).json()["choices"][0]
    b = chat(client, seed=42, temperature=1.0, return_token_ids=True).json()["choices"][0]
    assert a["token_ids"] == b["token_ids"]


def test_n_expands_into_rows(engine):
    client, _ = engine
    body = chat(client, n=3, seed=5, max_tokens=6, return_token_ids=True).json()
    assert [c["index"] for c in body["choices"]] == [0, 1, 2]
    assert body["usage"]["completion_tokens"] == sum(len(c["token_ids"]) for c in body["choices"])


def test_concurrent_requests_are_batched(engine):
    client, _ = engine
    before = client.get("/health").json()["stats"].get("batches", 0)

    async def burst():
        async with httpx.AsyncClient(base_url=str(client.base_url), timeout=120) as ac:
            return await asyncio.gather(*[
                ac.post("/v1/chat/completions", json={
                    "model": "SmolLM2-135M-Instruct", "max_tokens": 8, "seed": i,
                    "messages": [{"role": "user", "content": f"Say the number {i}."}],
                }) for i in range(8)
            ])

    responses = asyncio.run(burst())
    assert all(r.status_code == 200 for r in responses), [r.text for r in responses]
    assert all(r.json()["choices"][0]["message"]["content"] is not None for r in responses)
    if BACKEND == "transformers":
        # The transformers backend's own batcher (vLLM's scheduler batches inside vLLM and counts no batches).
        batches = client.get("/health").json()["stats"]["batches"] - before
        assert 1 <= batches < 8


def test_late_request_joins_running_batch_with_exact_logprobs(engine):
    """A request arriving while a batch runs joins it (KV cache spliced); its logprobs must still equal a
    fresh forward pass over prompt + completion, which checks the splice."""
    client, store = engine
    before = client.get("/health").json()["stats"].get("joined_rows", 0)
    late_msgs = [{"role": "user", "content": "Name three fruits."}]

    async def run():
        async with httpx.AsyncClient(base_url=str(client.base_url), timeout=120) as ac:
            long = asyncio.create_task(ac.post("/v1/chat/completions", json={
                "model": "SmolLM2-135M-Instruct", "messages": MSGS, "max_tokens": 48, "seed": 1}))
            await asyncio.sleep(1.0)
            late = await ac.post("/v1/chat/completions", json={
                "model": "SmolLM2-135M-Instruct", "messages": late_msgs, "max_tokens": 6, "seed": 2,
                "temperature": 0.8, "return_token_ids": True, "logprobs": True})
            return late, await long

    late, long = asyncio.run(run())
    assert late.status_code == 200 and long.status_code == 200
    if BACKEND == "transformers":  # its KV-cache splice; vLLM's continuous batching is vLLM's own
        assert client.get("/health").json()["stats"]["joined_rows"] > before
    body = late.json()
    ids = body["prompt_token_ids"] + body["choices"][0]["token_ids"]
    n = len(body["choices"][0]["token_ids"])
    with torch.no_grad(), store.use_adapter(None) as model:
        logits = model(input_ids=torch.tensor([ids])).logits[0, -n - 1:-1].float()
    expected = torch.log_softmax(logits, -1).gather(1, torch.tensor(ids[-n:])[:, None])[:, 0]
    got = torch.tensor([x["logprob"] for x in body["choices"][0]["logprobs"]["content"]])
    assert torch.allclose(got, expected, atol=1e-3), (got, expected)


def test_stop_string_ends_the_row(engine):
    client, _ = engine
    full = chat(client, temperature=0, max_tokens=16).json()["choices"][0]["message"]["content"]
    words = full.split()
    assert len(words) >= 3, full
    stop = " " + words[2]
    cut = chat(client, temperature=0, max_tokens=16, stop=[stop], return_token_ids=True).json()["choices"][0]
    assert cut["finish_reason"] == "stop"
    assert cut["message"]["content"] == full[: full.index(stop)]
    assert len(cut["token_ids"]) < 16


def test_bad_request_is_400_naming_the_field(engine):
    client, _ = engine
    r = chat(client, messages=[{"role": "robot", "content": "hi"}])
    assert r.status_code == 400
    assert r.json()["error"]["param"] == "messages.0.role"
    r = chat(client, max_tokens=0)
    assert r.status_code == 400 and "max_tokens" in r.json()["error"]["message"]
    r = client.post("/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400


def test_unknown_model_is_404(engine):
    client, _ = engine
    assert chat(client, model="nope").status_code == 404
    assert chat(client, model="run1@7").status_code == 404
    assert chat(client, model="../etc@1").status_code == 404


def test_checkpoint_adapter_is_served_and_listed(engine):
    client, store = engine
    base = chat(client, temperature=0, max_tokens=8, return_token_ids=True).json()["choices"][0]["token_ids"]
    tuned = chat(client, model="run1@1", temperature=0, max_tokens=8, return_token_ids=True)
    assert tuned.status_code == 200, tuned.text
    assert tuned.json()["choices"][0]["token_ids"] != base
    assert "run1@1" in [m["id"] for m in client.get("/v1/models", headers={"x-rollbook-workspace": WORKSPACE}).json()["data"]]
    # The base model is served with adapters disabled, even right after an adapter batch.
    again = chat(client, temperature=0, max_tokens=8, return_token_ids=True).json()["choices"][0]["token_ids"]
    assert again == base
    store.invalidate_run("run1")
    assert "run1@1" not in store.loaded_adapters()
    chat(client, max_tokens=1)  # the PEFT modules go at the next batch if a batch was still finishing
    assert not any(n.startswith("ckpt:run1") for n in store.model.peft_config)


def test_a_checkpoint_of_a_rank_above_what_the_backend_serves_is_refused_by_name(engine):
    """vLLM serves LoRAs up to its max_lora_rank (8 by default on CPU, where its kernels pad to it): a larger one
    is a 400 naming the setting, not a 500 from inside vLLM. The transformers backend serves any rank."""
    client, store = engine
    write_lora_checkpoint(store, store.checkpoint_dir("run1", 16), rank=16)
    r = chat(client, model="run1@16")
    if BACKEND == "vllm":
        assert r.status_code == 400 and "ROLLBOOK_VLLM_MAX_LORA_RANK" in r.json()["error"]["message"], r.text
        assert r.json()["error"]["param"] == "model"
    else:
        assert r.status_code == 200, r.text


def test_tool_calls_are_parsed(engine):
    from rollbook_engine.tool_formats.hermes import parse

    parsed = parse('ok <tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>', ["add"])
    assert parsed.content == "ok" and parsed.calls[0].function.name == "add"
    assert parsed.calls[0].function.arguments == '{"a": 1}'
    client, _ = engine
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    r = chat(client, tools=tools, max_tokens=4)
    assert r.status_code == 200, r.text


def test_exclusive_waits_for_batches_and_blocks_new_ones(engine):
    _, store = engine
    order: list[str] = []

    async def batch():
        async with store.generating():
            order.append("gen")
            await asyncio.sleep(0.05)
            order.append("gen-done")

    async def train():
        await asyncio.sleep(0.01)
        async with store.exclusive():
            order.append("train")
            await asyncio.sleep(0.02)
            order.append("train-done")

    async def late_batch():
        await asyncio.sleep(0.02)
        async with store.generating():
            order.append("late")

    async def main():
        await asyncio.gather(batch(), train(), late_batch())

    asyncio.run(main())
    assert order == ["gen", "gen-done", "train", "train-done", "late"]


@pytest.mark.gpu
def test_cuda_store_uses_bf16_and_generates():
    store = ModelStore(device=torch.device("cuda"))
    assert store.dtype == torch.bfloat16
    assert not torch.backends.cuda.cudnn_sdp_enabled()  # per-shape graph builds: see ModelStore.__init__
    from rollbook_engine.backends.base import GenerationRequest
    from rollbook_engine.backends.transformers_backend import TransformersBackend

    prompt = store.tokenizer.apply_chat_template(MSGS, add_generation_prompt=True, tokenize=True, return_dict=False)
    backend = TransformersBackend(store)
    reqs = [GenerationRequest(model=store.base_model_name, prompt_token_ids=list(prompt), max_tokens=16, seed=s)
            for s in range(4)]
    out = asyncio.run(backend.generate(reqs))
    for (r,) in out:
        assert r.token_ids and all(math.isfinite(x) and x <= 0 for x in r.logprobs)
        assert store.tokenizer.decode(r.token_ids, skip_special_tokens=True) == r.text
