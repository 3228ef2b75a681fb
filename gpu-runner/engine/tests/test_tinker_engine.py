"""The Tinker primitives (POST /tinker/*) on the real SmolLM2-135M through the real app over HTTP (CPU fp32).

Tiny datums and rank-2 LoRAs keep each test to a few seconds. Each test uses its own run ids.
"""

from __future__ import annotations

import json

import pytest
import torch
from conftest import own_run, serve_store

from rollbook_engine.model_store import ModelStore
from rollbook_engine.ownership import WORKSPACE_HEADER
from rollbook_engine.tinker.session import forget_sessions
from rollbook_engine.trainer.adapter_cache import adapter_name, forget_run, run_states
from rollbook_engine.trainer.checkpoints import read_optimizer

RANK = 2
ADAM = {"learning_rate": 1e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-4, "weight_decay": 0.0, "grad_clip_norm": 0.0}


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    store = ModelStore(runs_dir=tmp_path_factory.mktemp("tinker-runs"))
    with serve_store(store) as (_url, client):
        yield store, client


def target(run_id: str, **extra) -> dict:
    return {"run_id": run_id, "base_model": "SmolLM2-135M-Instruct", "lora_rank": RANK, "seed": 3, **extra}


def ids(store, text: str) -> list[int]:
    return store.tokenizer(text)["input_ids"]


def ce_datum(store, text: str) -> dict:
    """Next-token prediction over `text`, the first two positions masked (weight 0)."""
    t = ids(store, text)
    return {"tokens": t[:-1], "target_tokens": t[1:], "weights": [0.0, 0.0] + [1.0] * (len(t) - 3)}


def fb(client, run_id: str, data: list[dict], loss_fn: str = "cross_entropy", forward_only: bool = False, **extra):
    r = client.post("/tinker/forward_backward", json=target(run_id, forward_only=forward_only, loss_fn=loss_fn,
                                                            data=data, **extra))
    assert r.status_code == 200, r.text
    return r.json()


def step(client, run_id: str, **adam):
    r = client.post("/tinker/optim_step", json=target(run_id, adam_params={**ADAM, **adam}))
    assert r.status_code == 200, r.text
    return r.json()


def params(store, run_id: str) -> dict[str, torch.Tensor]:
    return {n.replace(adapter_name(run_id), "A"): p.detach().clone() for n, p in run_states(store)[run_id].params}


def grads(store, run_id: str) -> dict[str, torch.Tensor]:
    return {n.replace(adapter_name(run_id), "A"): (p.grad.clone() if p.grad is not None else torch.zeros_like(p))
            for n, p in run_states(store)[run_id].params}


def test_gradients_accumulate_across_calls(engine):
    store, client = engine
    d1, d2 = ce_datum(store, "The capital of France is Paris."), ce_datum(store, "Two plus two is four.")
    fb(client, "acc-a", [d1])
    second = fb(client, "acc-a", [d2])
    assert second["pending_batches"] == 2
    out = fb(client, "acc-b", [d1, d2])
    assert out["pending_batches"] == 1
    ga, gb = grads(store, "acc-a"), grads(store, "acc-b")
    assert any(g.abs().sum() > 0 for g in ga.values())
    # The sum of two calls' gradients is the one call's over both datums, up to fp32 reduction order (the batched
    # call runs other matmul shapes, ~2e-4 of the norm measured), per tensor relative to its norm: a lost or
    # doubled datum would be off by tens of percent.
    for k in ga:
        assert (ga[k] - gb[k]).norm() <= 2e-3 * ga[k].norm() + 1e-9, (k, float((ga[k] - gb[k]).norm()), float(ga[k].norm()))
    # eps 1: AdamW's first update is ~lr·g/(|g| + eps), linear in g here, so the fp32 noise above stays that small
    # (with a tiny eps it is lr·sign(g), where noise on a near-zero entry flips a whole lr).
    sa, sb = step(client, "acc-a", eps=1.0), step(client, "acc-b", eps=1.0)
    assert sa["step"] == sb["step"] == 1 and sa["metrics"]["batches"] == 2 and sb["metrics"]["batches"] == 1
    assert sa["metrics"]["loss"] == pytest.approx(sb["metrics"]["loss"], rel=1e-4)
    assert sa["metrics"]["trained_tokens"] == sb["metrics"]["trained_tokens"] == len(d1["tokens"]) + len(d2["tokens"])
    assert sa["metrics"]["grad_norm"] == pytest.approx(sb["metrics"]["grad_norm"], rel=1e-3)
    pa, pb = params(store, "acc-a"), params(store, "acc-b")
    for k in pa:
        assert (pa[k] - pb[k]).norm() <= 2e-3 * pa[k].norm(), k  # B was 0: the update itself, as noisy as g
    assert all(p.grad is None for _, p in run_states(store)["acc-a"].params)  # zeroed by the step


def test_cross_entropy_loss_matches_logprobs_and_falls(engine):
    store, client = engine
    d = ce_datum(store, "Rollbook trains small models on one machine.")
    losses = []
    for _ in range(4):
        out = fb(client, "ce-fall", [d])
        o = out["loss_fn_outputs"][0]
        # Tinker's cross_entropy: −weights·logp per position, summed.
        assert o["elementwise_loss"] == pytest.approx([-w * lp for w, lp in zip(d["weights"], o["logprobs"])], abs=1e-5)
        assert out["metrics"]["loss:sum"] == pytest.approx(sum(o["elementwise_loss"]), rel=1e-5)
        assert out["metrics"]["entropy:mean"] > 0
        losses.append(out["metrics"]["loss:sum"])
        step(client, "ce-fall")
    assert losses[-1] < losses[0] * 0.8, losses


def test_forward_only_changes_nothing_and_matches_the_sampler(engine):
    store, client = engine
    prompt = ids(store, "Once upon a time")
    r = client.post("/tinker/sample", json={"model": store.base_model_name, "prompt_token_ids": prompt,
                                            "num_samples": 1, "max_tokens": 6, "temperature": 1.0, "top_p": 1.0,
                                            "top_k": -1, "seed": 5, "prompt_logprobs": True})
    assert r.status_code == 200, r.text
    body = r.json()
    seq = body["sequences"][0]
    full = prompt + seq["tokens"]
    datum = {"tokens": full[:-1], "target_tokens": full[1:], "weights": [1.0] * (len(full) - 1)}
    out = fb(client, "fwd-only", [datum], forward_only=True)
    assert out["pending_batches"] == 0
    assert all(p.grad is None for _, p in run_states(store)["fwd-only"].params)
    lps = out["loss_fn_outputs"][0]["logprobs"]
    # A fresh LoRA (B = 0) is the base model: the trainer's forward agrees with the sampler and the prompt scorer.
    assert lps[len(prompt) - 1:] == pytest.approx(seq["logprobs"], abs=1e-3)
    assert body["prompt_logprobs"][0] is None
    assert lps[: len(prompt) - 1] == pytest.approx(body["prompt_logprobs"][1:], abs=1e-3)
    before = params(store, "fwd-only")
    again = fb(client, "fwd-only", [datum], forward_only=True)
    assert again["loss_fn_outputs"][0]["logprobs"] == pytest.approx(lps, abs=1e-6)
    assert all(torch.equal(before[k], v) for k, v in params(store, "fwd-only").items())


def test_rl_losses_and_stop_token_ids(engine):
    store, client = engine
    prompt = ids(store, "List three fruits:")
    r = client.post("/tinker/sample", json={"model": store.base_model_name, "prompt_token_ids": prompt,
                                            "num_samples": 2, "max_tokens": 5, "temperature": 1.0, "top_p": 1.0,
                                            "top_k": -1, "seed": 1})
    seqs = r.json()["sequences"]
    assert len(seqs) == 2 and r.json()["prompt_logprobs"] is None
    # A stop token id that is not an end token: the sample is cut after it, marked "stop".
    first = seqs[0]["tokens"][1]
    r2 = client.post("/tinker/sample", json={"model": store.base_model_name, "prompt_token_ids": prompt,
                                             "num_samples": 1, "max_tokens": 5, "temperature": 1.0, "top_p": 1.0,
                                             "top_k": -1, "seed": 1, "stop_token_ids": [first]})
    cut = r2.json()["sequences"][0]
    assert cut["tokens"] == seqs[0]["tokens"][:2] and cut["stop_reason"] == "stop" and len(cut["logprobs"]) == 2
    assert cut["text"] == store.tokenizer.decode(cut["tokens"], skip_special_tokens=True)
    assert r2.json()["prompt_text"] == "List three fruits:"
    data = []
    for s, adv in zip(seqs, (1.0, -1.0)):
        full = prompt + s["tokens"]
        n = len(full) - 1
        data.append({"tokens": full[:-1], "target_tokens": full[1:],
                     "logprobs": [0.0] * (len(prompt) - 1) + s["logprobs"],
                     "advantages": [0.0] * (len(prompt) - 1) + [adv] * len(s["tokens"])})
        assert len(data[-1]["logprobs"]) == n
    for loss in ("importance_sampling", "ppo", "cispo"):
        out = fb(client, f"rl-{loss}", data, loss_fn=loss, forward_only=True)
        # On-policy (fresh LoRA = the sampler's model): ratio 1, so each position's loss is −A (cispo: −A·logp).
        for d, o in zip(data, out["loss_fn_outputs"]):
            want = [-a * (lp if loss == "cispo" else 1.0) for a, lp in zip(d["advantages"], o["logprobs"])]
            assert o["elementwise_loss"] == pytest.approx(want, abs=2e-3)
        if loss != "importance_sampling":
            assert out["metrics"]["clip_fraction:mean"] == 0.0


def test_save_sample_load_and_ownership(engine):
    store, client = engine
    own_run(store, "sv-a", "ws-1")
    own_run(store, "sv-other", "ws-2")
    assert client.post("/tinker/save", json=target("sv-a", kind="state")).json() == {"step": 0, "checkpoint": None}
    d = ce_datum(store, "A checkpoint is saved here.")
    fb(client, "sv-a", [d])
    step(client, "sv-a")
    first = client.post("/tinker/save", json=target("sv-a", kind="sampler")).json()
    assert first["step"] == 1 and first["checkpoint"]["step"] == 1 and first["checkpoint"]["size_bytes"] > 0
    ckpt = store.checkpoint_dir("sv-a", 1)
    state = json.loads((ckpt / "trainer_state.json").read_text())
    assert state["source"] == "tinker" and state["step"] == 1 and state["base_model"] == store.base_model_name
    again = client.post("/tinker/save", json=target("sv-a", kind="state")).json()
    assert again == first  # idempotent: the same checkpoint
    listed = client.get("/runs/sv-a/checkpoints").json()
    assert listed["newest_step"] == 1 and listed["checkpoints"] == [first["checkpoint"]]
    ws1, ws2 = {WORKSPACE_HEADER: "ws-1"}, {WORKSPACE_HEADER: "ws-2"}
    body = {"model": "sv-a@1", "prompt_token_ids": ids(store, "Hello"), "num_samples": 1, "max_tokens": 3,
            "temperature": 0.0, "top_p": 1.0, "top_k": -1, "prompt_logprobs": True}
    r = client.post("/tinker/sample", json=body, headers=ws1)
    assert r.status_code == 200 and len(r.json()["sequences"][0]["tokens"]) >= 1, r.text
    assert len(r.json()["prompt_logprobs"]) == len(body["prompt_token_ids"])
    r = client.post("/tinker/sample", json=body, headers=ws2)
    assert r.status_code == 404 and r.json()["field"] == "model"
    # Load into a new run: its step is the checkpoint's, with AdamW's moments restored.
    r = client.post("/tinker/load", json=target("sv-b", source_run_id="sv-a", step=1, with_optimizer=True), headers=ws1)
    assert r.status_code == 200 and r.json() == {"step": 1}, r.text
    saved = read_optimizer(ckpt)["state"]
    loaded = run_states(store)["sv-b"].optimizer.state_dict()["state"]
    assert saved.keys() == loaded.keys()
    assert all(torch.equal(saved[i]["exp_avg"], loaded[i]["exp_avg"]) for i in saved)
    assert all(torch.equal(a, b) for a, b in zip(params(store, "sv-a").values(), params(store, "sv-b").values()))
    fb(client, "sv-b", [d])
    assert step(client, "sv-b")["step"] == 2
    # Another workspace's checkpoint is "not found", and nothing of sv-c is created.
    r = client.post("/tinker/load", json=target("sv-c", source_run_id="sv-other", step=1, with_optimizer=False),
                    headers=ws1)
    assert r.status_code == 404 and r.json()["field"] == "source_run_id"
    r = client.post("/tinker/load", json=target("sv-c", source_run_id="sv-a", step=7, with_optimizer=False), headers=ws1)
    assert r.status_code == 404 and r.json()["field"] == "step"
    assert not (store.runs_dir / "sv-c").exists()


@pytest.mark.parametrize("patch, field, status", [
    ({"run_id": "../escape"}, "run_id", 422),
    ({"run_id": "a.b"}, "run_id", 422),
    ({"data": [{"tokens": [1, 2], "target_tokens": [2, 10**9], "weights": [1.0, 1.0]}]}, "data[0].target_tokens[1]", 422),
    ({"data": [{"tokens": [1, 2, 3], "target_tokens": [2, 3], "weights": [1.0, 1.0, 1.0]}]}, "data[0].target_tokens", 422),
    ({"data": [{"tokens": [1, 2], "target_tokens": [2, 3], "weights": [1.0]}]}, "data[0].weights", 422),
    ({"data": [{"tokens": [1, 2], "target_tokens": [2, 3]}]}, "data[0].weights", 422),
    ({"loss_fn": "importance_sampling", "data": [{"tokens": [1, 2], "target_tokens": [2, 3], "logprobs": [-1.0, -1.0]}]},
     "data[0].advantages", 422),
    ({"loss_fn": "ppo", "data": [{"tokens": [1], "target_tokens": [2], "logprobs": [3.0], "advantages": [1.0]}]},
     "data[0].logprobs[0]", 422),
    ({"data": [{"tokens": [-1], "target_tokens": [2], "weights": [1.0]}]}, "data[0].tokens[0]", 422),
    ({"base_model": "Llama-3-70B"}, "base_model", 400),
    ({"loss_fn_config": {"clip_low_threshold": 1.5, "clip_high_threshold": 1.2}}, "loss_fn_config.clip_low_threshold", 422),
])
def test_hostile_forward_backward_is_refused_naming_the_field(engine, patch, field, status):
    store, client = engine
    before = sorted(p.name for p in store.runs_dir.iterdir())
    body = target("hostile", forward_only=False, loss_fn="cross_entropy",
                  data=[{"tokens": [1, 2], "target_tokens": [2, 3], "weights": [1.0, 1.0]}]) | patch
    r = client.post("/tinker/forward_backward", json=body)
    assert r.status_code == status, r.text
    assert r.json()["field"] == field, r.json()
    assert sorted(p.name for p in store.runs_dir.iterdir()) == before  # nothing written
    assert "hostile" not in run_states(store)


def test_other_refusals(engine):
    store, client = engine
    r = client.post("/tinker/sample", json={"model": store.base_model_name, "prompt_token_ids": [1], "num_samples": 1,
                                            "max_tokens": 2, "temperature": 1.0, "top_p": 1.0, "top_k": 40})
    assert r.status_code == 400 and r.json()["field"] == "top_k"
    r = client.post("/tinker/sample", json={"model": store.base_model_name, "prompt_token_ids": [10**8],
                                            "num_samples": 1, "max_tokens": 2, "temperature": 1.0, "top_p": 1.0,
                                            "top_k": -1})
    assert r.status_code == 422 and r.json()["field"] == "prompt_token_ids[0]"
    fb(client, "rank-fixed", [ce_datum(store, "Fixed rank.")], forward_only=True)
    r = client.post("/tinker/optim_step", json={**target("rank-fixed", adam_params=ADAM), "lora_rank": RANK + 1})
    assert r.status_code == 409 and r.json()["field"] == "lora_rank"


def test_lost_pending_gradients_fail_the_next_optim_step(engine):
    store, client = engine
    d = ce_datum(store, "Gradients must not vanish silently.")
    # Evicted for another run's state (the ledger's own eviction, under the model lock as the ledger runs it).
    fb(client, "lost-ev", [d])
    with store._model_lock:
        store.ledger.evict(adapter_name("lost-ev"))
    r = client.post("/tinker/optim_step", json=target("lost-ev", adam_params=ADAM))
    assert r.status_code == 409 and "lost" in r.json()["detail"], r.text
    assert step(client, "lost-ev")["step"] == 1  # refused once, then the run goes on (rebuilt from its spill)
    # An engine restart: memory gone, the run's record on disk says gradients were pending.
    fb(client, "lost-rs", [d])
    with store._model_lock:
        forget_sessions(store)
        forget_run(store, "lost-rs")
    r = client.post("/tinker/optim_step", json=target("lost-rs", adam_params=ADAM))
    assert r.status_code == 409 and "lost" in r.json()["detail"], r.text
    # Trained past its last save and restarted: refused, never continued from other weights.
    assert step(client, "lost-rs")["step"] == 1
    with store._model_lock:
        forget_sessions(store)
        forget_run(store, "lost-rs")
    r = client.post("/tinker/optim_step", json=target("lost-rs", adam_params=ADAM))
    assert r.status_code == 409 and "never saved" in r.json()["detail"], r.text
