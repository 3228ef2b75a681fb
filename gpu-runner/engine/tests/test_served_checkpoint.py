"""A train step over HTTP, then its `<run>@<step>` served: what the runner relies on between two steps, on
whichever backend serves (the vLLM backend loads the trainer's checkpoint as a LoRA of its own).

Sampled rows go into POST /train as the runner sends them; the trainer's recomputed logprobs must match the
sampler's (probs_corr), and the checkpoint the step wrote must then be served with the trainer's numbers:
the served logprobs of `<run>@1` equal a forward pass of the store's model with that adapter, and differ from
the base model's (so the adapter was applied, not silently dropped)."""

from __future__ import annotations

import json

import pytest
import torch

from conftest import own_run

pytestmark = pytest.mark.conformance

MODEL = "SmolLM2-135M-Instruct"
WORKSPACE = "ws-served-checkpoint"
HEADERS = {"x-rollbook-workspace": WORKSPACE}
RUN = "served-ckpt"
PROMPTS = ["Name a colour.", "Say a word that starts with b.", "What is 2 plus 3?"]
GROUP = 4


def chat(served, model: str, content: str, **body):
    r = served.client.post("/v1/chat/completions", headers=HEADERS, json={
        "model": model, "messages": [{"role": "user", "content": content}], "max_tokens": 12,
        "logprobs": True, "return_token_ids": True, **body})
    assert r.status_code == 200, r.text
    return r.json()


def forward_logprobs(store, adapter_model: str | None, prompt: list[int], sampled: list[int]) -> torch.Tensor:
    """The store's own model (the trainer's; with the checkpoint's adapter for a `<run>@<step>`)."""
    adapter = store.resolve_adapter(adapter_model) if adapter_model else None
    ids = torch.tensor([prompt + sampled])
    with store.use_adapter(adapter) as model, torch.inference_mode():
        logits = model(input_ids=ids).logits[0, len(prompt) - 1:-1].float()
    return torch.log_softmax(logits, -1).gather(1, torch.tensor(sampled)[:, None])[:, 0]


def train(served, step: int, groups: list[dict]) -> dict:
    body = {"run_id": RUN, "step": step, "base_model": MODEL, "seed": 7, "groups": groups,
            "config": {"learning_rate": 5e-3}}
    with served.client.stream("POST", "/train", json=body, headers=HEADERS) as r:
        assert r.status_code == 200
        lines = [json.loads(x) for x in r.iter_lines() if x]
    assert lines[-1]["type"] == "result", lines[-1]
    return lines[-1]


def test_a_trained_step_is_served_with_the_trainers_numbers(served):
    own_run(served.store, RUN, WORKSPACE)
    groups = []
    for g, prompt in enumerate(PROMPTS):
        body = chat(served, MODEL, prompt, n=GROUP, seed=g, temperature=1.0)
        samples = []
        for i, choice in enumerate(body["choices"]):
            p, ids = body["prompt_token_ids"], choice["token_ids"]
            lps = [t["logprob"] for t in choice["logprobs"]["content"]]
            assert len(lps) == len(ids)
            samples.append({"trajectory_id": f"{g}-{i}", "reward": float(i % 2), "sequences": [
                {"tokens": p + ids, "mask": [0] * len(p) + [1] * len(ids), "logprobs": [0.0] * len(p) + lps}]})
        groups.append({"samples": samples})

    result = train(served, 1, groups)
    # A fresh LoRA is the base model: the trainer recomputes what the sampler reported.
    assert result["metrics"]["probs_corr"] >= 0.99, result["metrics"]
    assert result["checkpoint"]["step"] == 1

    # Greedy from the checkpoint: served logprobs = the trainer's model with that adapter, not the base's.
    served_body = chat(served, f"{RUN}@1", PROMPTS[0], temperature=0, max_tokens=16)
    prompt, sampled = served_body["prompt_token_ids"], served_body["choices"][0]["token_ids"]
    got = torch.tensor([t["logprob"] for t in served_body["choices"][0]["logprobs"]["content"]])
    want = forward_logprobs(served.store, f"{RUN}@1", prompt, sampled)
    base = forward_logprobs(served.store, None, prompt, sampled)
    assert torch.allclose(got, want, atol=2e-3), (got, want)
    assert (want - base).abs().max() > 2e-2, "the step changed nothing the test can see: raise its learning rate"

    # The listing names it for its workspace.
    listed = served.client.get("/v1/models", headers=HEADERS).json()["data"]
    assert f"{RUN}@1" in {m["id"] for m in listed}
