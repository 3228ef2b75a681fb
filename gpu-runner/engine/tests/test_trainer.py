"""The trainer on the real SmolLM2-135M-Instruct through the real ModelStore (CPU fp32; CUDA bf16 when present).

Samples come from the engine's own transformers backend, so the recomputed-logprob check covers the real
sampling path (left-padded, KV-cached) against the trainer's (right-padded, no cache). Each test uses its
own run id, so the tests do not depend on each other's steps.
"""

from __future__ import annotations

import asyncio
import json

import pytest
import torch
from fastapi import FastAPI
from fastapi.testclient import TestClient
from safetensors.torch import load_file

from rollbook_engine.backends.base import GenerationRequest
from rollbook_engine.backends.transformers_backend import TransformersBackend
from rollbook_engine.contracts.train import TrainRequest, TrainStreamLine
from rollbook_engine.model_store import ModelStore
from rollbook_engine.train_routes import router
from rollbook_engine.trainer.batch import BadRequest
from rollbook_engine.trainer.checkpoints import read_optimizer
from rollbook_engine.trainer.adapter_cache import forget_run
from rollbook_engine.trainer.errors import StepConflict
from rollbook_engine.trainer.step_checks import check_request
from rollbook_engine.trainer.trainer import train_step_sync
from pydantic import TypeAdapter

PROMPTS = ["Say hi.", "Name a colour.", "What is 2+2?", "Count to three."]
GROUP_SIZE = 4


def sample_groups(store: ModelStore, max_tokens: int = 24, seed: int = 0) -> list[dict]:
    """GROUP_SIZE completions per prompt from the engine's backend, as TrainGroup dicts (rewards 0,1,0,1...)."""
    backend = TransformersBackend(store)
    reqs = []
    for p in PROMPTS:
        prompt = store.tokenizer.apply_chat_template(
            [{"role": "user", "content": p}], add_generation_prompt=True, tokenize=True, return_dict=False
        )
        if isinstance(prompt, dict) or hasattr(prompt, "input_ids"):
            prompt = prompt["input_ids"]
        reqs.append(GenerationRequest(model=store.base_model_name, prompt_token_ids=list(prompt),
                                      max_tokens=max_tokens, temperature=1.0, n=GROUP_SIZE, seed=seed))

    async def run():
        try:
            return await backend.generate(reqs)
        finally:
            await backend.close()

    results = asyncio.run(run())
    groups = []
    for g, (req, outs) in enumerate(zip(reqs, results)):
        samples = []
        for i, out in enumerate(outs):
            p = req.prompt_token_ids
            samples.append({
                "trajectory_id": f"{g}-{i}",
                "reward": float(i % 2),  # arbitrary but with variance: every group trains
                "sequences": [{
                    "tokens": p + out.token_ids,
                    "mask": [0] * len(p) + [1] * len(out.token_ids),
                    "logprobs": [0.0] * len(p) + out.logprobs,
                }],
            })
        groups.append({"samples": samples})
    return groups


def make_request(run_id: str, step: int, groups: list[dict], **config) -> TrainRequest:
    return TrainRequest.model_validate({
        "run_id": run_id, "step": step, "base_model": "SmolLM2-135M-Instruct", "seed": 7,
        "config": config, "groups": groups,
    })


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return ModelStore(runs_dir=tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def groups(store):
    return sample_groups(store)


def adapter_weights(store, run_id: str, step: int) -> dict[str, torch.Tensor]:
    return load_file(str(store.checkpoint_dir(run_id, step) / "adapter_model.safetensors"))


def test_recomputed_logprobs_match_sampling_and_step_writes_checkpoint(store, groups):
    progress = []
    result = train_step_sync(store, make_request("match", 1, groups), progress.append)
    m = result.metrics
    # A fresh LoRA (B = 0) is the base model: the trainer must recompute what the sampler reported.
    assert m.probs_corr >= 0.99, m
    assert m.clip_fraction < 0.05, m
    assert not m.skipped and m.groups_submitted == 4 and m.groups_trainable == 4
    assert m.trained_tokens == sum(sum(s["sequences"][0]["mask"]) for g in groups for s in g["samples"])
    assert m.grad_norm > 0 and m.entropy > 0
    assert [p.micro_batch for p in progress] == [1, 2]  # 16 sequences / micro_batch_size 8
    # The checkpoint write is timed apart (the charts' step time split) and is part of duration_s.
    assert m.checkpoint_s is not None and 0 < m.checkpoint_s < m.duration_s, m
    ckpt = store.checkpoint_dir("match", 1)
    assert result.checkpoint.step == 1 and result.checkpoint.path == str(ckpt.resolve())
    for f in ("adapter_config.json", "adapter_model.safetensors", "optimizer.pt", "trainer_state.json"):
        assert (ckpt / f).is_file(), f
    assert result.checkpoint.size_bytes == sum(f.stat().st_size for f in ckpt.iterdir())
    state = json.loads((ckpt / "trainer_state.json").read_text())
    assert state["step"] == 1 and state["seed"] == 7 and state["config"]["lora_rank"] == 8
    assert state["metrics"]["probs_corr"] == m.probs_corr
    # The adapter moved (B was 0 before the step) and only this run's weights were saved.
    weights = adapter_weights(store, "match", 1)
    assert any("lora_B" in k and v.abs().sum() > 0 for k, v in weights.items())
    assert all("placeholder" not in k for k in weights)
    assert not list(ckpt.parent.glob(".tmp-*"))
    # The inference side can serve the checkpoint by name.
    assert store.resolve_adapter("match@1") is not None


def test_step_must_follow_newest_checkpoint(store, groups):
    train_step_sync(store, make_request("order", 1, groups[:1]))
    with pytest.raises(StepConflict) as e:
        check_request(store, make_request("order", 3, groups[:1]))
    assert "step 3" in str(e.value) and "step 1" in str(e.value)
    with pytest.raises(StepConflict):  # repeating a step is refused too
        check_request(store, make_request("order", 1, groups[:1]))
    check_request(store, make_request("order", 2, groups[:1]))


def test_resume_from_checkpoint_is_exact(store, groups):
    """Steps 1→2 in memory and 1→(restart)→2 from disk give the same optimizer state and adapter."""
    for run in ("live", "resumed"):
        train_step_sync(store, make_request(run, 1, groups))
    live_state = {k: v.clone() for k, v in _opt_state(store, "live").items()}
    saved = read_optimizer(store.checkpoint_dir("live", 1))
    for k, v in live_state.items():
        assert torch.equal(v.cpu(), _flat_state(saved)[k]), k
    forget_run(store, "resumed")  # as after an engine restart: adapter and optimizer come from disk
    assert "train:resumed" not in store.model.peft_config
    train_step_sync(store, make_request("live", 2, groups))
    train_step_sync(store, make_request("resumed", 2, groups))
    a, b = adapter_weights(store, "live", 2), adapter_weights(store, "resumed", 2)
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=1e-6)
    sa = _flat_state(read_optimizer(store.checkpoint_dir("live", 2)))
    sb = _flat_state(read_optimizer(store.checkpoint_dir("resumed", 2)))
    assert sa.keys() == sb.keys()
    for k in sa:
        torch.testing.assert_close(sa[k], sb[k], rtol=0, atol=1e-6)
    assert json.loads((store.checkpoint_dir("resumed", 2) / "trainer_state.json").read_text())["step"] == 2


def _flat_state(opt_state: dict) -> dict[str, torch.Tensor]:
    return {f"{i}.{name}": t.cpu() for i, s in opt_state["state"].items() for name, t in s.items()}


def _opt_state(store, run_id):
    from rollbook_engine.trainer.adapter_cache import run_states

    return _flat_state(run_states(store)[run_id].optimizer.state_dict())


def test_all_zero_variance_step_is_skipped_but_checkpointed(store, groups):
    train_step_sync(store, make_request("flat", 1, groups))
    same = [{"samples": [{**s, "reward": 1.0} for s in g["samples"]]} for g in groups]
    result = train_step_sync(store, make_request("flat", 2, same), lambda p: pytest.fail("no micro-batch expected"))
    m = result.metrics
    assert m.skipped and m.groups_submitted == 4 and m.groups_trainable == 0 and m.trained_tokens == 0
    assert result.checkpoint.step == 2
    before, after = adapter_weights(store, "flat", 1), adapter_weights(store, "flat", 2)
    for k in before:
        assert torch.equal(before[k], after[k]), k
    check_request(store, make_request("flat", 3, same))  # the step count advanced


def test_options_kl_cispo_gspo_mini_epochs(store, groups):
    result = train_step_sync(store, make_request(
        "opts", 1, groups[:2], loss="cispo", importance_sampling_level="sequence", beta=0.04,
        mini_epochs=2, micro_batch_size=3, epsilon=1.0, epsilon_high=4.0,
    ))
    m = result.metrics
    assert not m.skipped and m.kl >= 0 and m.probs_corr >= 0.99
    # After the first mini-epoch's update the adapter differs from the base: KL becomes positive.
    assert m.kl > 0


def test_bad_input_names_the_field(store, groups):
    bad = json.loads(json.dumps(groups[:1]))
    bad[0]["samples"][1]["sequences"][0]["mask"][0] = 1
    with pytest.raises(BadRequest) as e:
        check_request(store, make_request("bad", 1, bad))
    assert e.value.field == "groups.0.samples.1.sequences.0.mask.0"
    big = json.loads(json.dumps(groups[:1]))
    big[0]["samples"][0]["sequences"][0]["tokens"][3] = 10**6
    with pytest.raises(BadRequest) as e:
        check_request(store, make_request("bad", 1, big))
    assert e.value.field == "groups.0.samples.0.sequences.0.tokens.3"


# ---- HTTP ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(store):
    app = FastAPI()
    app.state.store = store
    app.include_router(router)
    with TestClient(app) as c:
        yield c


def test_http_train_streams_progress_then_result(client, store, groups):
    body = make_request("http", 1, groups[:2], micro_batch_size=4).model_dump()
    with client.stream("POST", "/train", json=body) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(x) for x in r.iter_lines() if x]
    parsed = [TypeAdapter(TrainStreamLine).validate_python(x) for x in lines]
    assert [p.type for p in parsed] == ["progress", "progress", "result"]
    assert [p.micro_batch for p in parsed[:2]] == [1, 2] and parsed[0].micro_batches == 2
    assert parsed[-1].checkpoint.step == 1
    listing = client.get("/runs/http/checkpoints").json()
    assert listing["newest_step"] == 1 and [c["step"] for c in listing["checkpoints"]] == [1]
    assert client.get("/runs/nothing-here/checkpoints").json() == {"run_id": "nothing-here", "newest_step": 0, "checkpoints": []}


def test_http_errors_have_codes_and_fields(client, groups):
    body = make_request("http-err", 1, groups[:1]).model_dump()
    r = client.post("/train", json={**body, "step": 5})
    assert r.status_code == 409 and "step 5" in r.json()["detail"] and "step 0" in r.json()["detail"]
    r = client.post("/train", json={**body, "config": {"learning_rate": -1}})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "config.learning_rate"
    r = client.post("/train", json={**body, "config": {"lr": 0.1}})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "config.lr"
    seq = body["groups"][0]["samples"][0]["sequences"][0]
    seq["logprobs"] = seq["logprobs"][:-1]
    r = client.post("/train", json=body)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "groups.0.samples.0.sequences.0"
    r = client.post("/train", json={**make_request("http-err", 1, groups[:1]).model_dump(), "base_model": "gpt2"})
    assert r.status_code == 400 and r.json()["field"] == "base_model"
    assert client.get("/runs/..%2Fetc/checkpoints").status_code in (404, 422)


# ---- GPU -------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_bf16_step(store, groups):
    assert store.device.type == "cuda" and store.dtype == torch.bfloat16
    result = train_step_sync(store, make_request("cuda", 1, groups))
    # bf16 forward passes differ slightly between the KV-cached sampler and the full-sequence trainer.
    assert result.metrics.probs_corr >= 0.98, result.metrics
    assert not result.metrics.skipped and result.metrics.grad_norm > 0
    lora = [p for n, p in store.model.named_parameters() if ".train:cuda." in n]
    assert lora and all(p.dtype == torch.float32 and p.device.type == "cuda" for p in lora)
    result = train_step_sync(store, make_request("cuda", 2, groups))
    assert result.checkpoint.step == 2


def test_engine_server_mounts_train_routes(store, groups):
    """server.create_app includes this router; /train answers 503 until the model is loaded, then trains."""
    import time

    from rollbook_engine.server import create_app

    app = create_app(store_factory=lambda name: store)
    with TestClient(app) as c:
        for _ in range(600):
            if app.state.store is not None:
                break
            time.sleep(0.05)
        body = make_request("server", 1, groups[:1]).model_dump()
        with c.stream("POST", "/train", json=body) as r:
            assert r.status_code == 200
            last = [json.loads(x) for x in r.iter_lines() if x][-1]
        assert last["type"] == "result" and last["checkpoint"]["step"] == 1
        assert c.get("/runs/server/checkpoints").json()["newest_step"] == 1
    loading = FastAPI()
    loading.state.store = None
    loading.include_router(router)
    assert TestClient(loading).post("/train", json=body).status_code == 503


def test_result_carries_the_trainers_first_pass_logprobs_per_trained_sample(store, groups):
    """token_logprobs: per trained trajectory, per sequence, one trainer logprob per masked token, close to the
    sampling logprob (fresh LoRA = the sampler's weights); a zero-variance group's samples are absent."""
    flat = {"samples": [{**s, "trajectory_id": f"flat-{i}", "reward": 0.5} for i, s in enumerate(groups[1]["samples"])]}
    # Two micro-batches (micro_batch_size 3 over 4 rows), so rows come back from length-sorted batches.
    result = train_step_sync(store, make_request("token-lps", 1, [groups[0], flat], micro_batch_size=3))
    lps = result.token_logprobs
    assert sorted(lps) == sorted(s["trajectory_id"] for s in groups[0]["samples"])
    log_ratios, olds, news = [], [], []
    for s in groups[0]["samples"]:
        got = lps[s["trajectory_id"]]
        assert got.advantage == pytest.approx(1.0 if s["reward"] == 1.0 else -1.0, abs=1e-4)
        seq = s["sequences"][0]
        sampled = [lp for lp, m in zip(seq["logprobs"], seq["mask"]) if m == 1]
        assert len(got.sequences) == 1 and len(got.sequences[0]) == len(sampled)
        for old, new in zip(sampled, got.sequences[0]):
            log_ratios.append(abs(new - old))
            olds.append(old)
            news.append(new)
    # Same weights on CPU fp32: the sampler (KV cache, left padding) and the trainer agree token by token.
    assert max(log_ratios) < 0.05, max(log_ratios)
    assert sum(log_ratios) / len(log_ratios) < 0.005
    # The same first-pass values the step's probs_corr correlates.
    from rollbook_engine.trainer.loss import pearson

    corr = pearson(torch.tensor(olds).exp(), torch.tensor(news).exp())
    assert corr == pytest.approx(result.metrics.probs_corr, abs=1e-3)
    # Round-trips through the stream contract.
    line = TypeAdapter(TrainStreamLine).validate_json(result.model_dump_json())
    assert line.token_logprobs.keys() == lps.keys()


def test_skipped_step_has_no_token_logprobs(store, groups):
    same = [{"samples": [{**s, "reward": 1.0} for s in g["samples"]]} for g in groups[:1]]
    result = train_step_sync(store, make_request("token-lps-flat", 1, same))
    assert result.metrics.skipped and result.token_logprobs == {}


# ---- sequences without sampling logprobs (recomputed_logprobs) -------------------------------------


def without_logprobs(groups: list[dict]) -> list[dict]:
    """The same samples as if sampled elsewhere and re-tokenised: logprobs 0, recomputed_logprobs true."""
    out = json.loads(json.dumps(groups))
    for g in out:
        for s in g["samples"]:
            for q in s["sequences"]:
                q["logprobs"] = [0.0] * len(q["logprobs"])
                q["recomputed_logprobs"] = True
    return out


def test_recomputed_logprobs_train_on_policy_with_ratio_one(store, groups):
    rec = without_logprobs(groups[:2])
    # Without the flag, logprobs all 0 still read as missing and are refused.
    unflagged = json.loads(json.dumps(rec))
    for g in unflagged:
        for s in g["samples"]:
            del s["sequences"][0]["recomputed_logprobs"]
    with pytest.raises(BadRequest) as e:
        check_request(store, make_request("recomputed", 1, unflagged))
    assert e.value.field == "groups.0.samples.0.sequences.0.logprobs"

    # epsilon 0: every ratio other than exactly 1 counts as clipped. With the sampler's logprobs some are off by
    # float noise; with recomputed ones (the policy's own, detached) none is, and the step still learns.
    sampled = train_step_sync(store, make_request("recomputed-control", 1, groups[:2], epsilon=0.0, epsilon_high=0.0))
    assert sampled.metrics.clip_fraction > 0, sampled.metrics
    result = train_step_sync(store, make_request("recomputed", 1, rec, epsilon=0.0, epsilon_high=0.0))
    m = result.metrics
    assert m.clip_fraction == 0.0 and not m.skipped and m.grad_norm > 0, m
    assert m.trained_tokens == sampled.metrics.trained_tokens
    # The first pass's logprobs (the old ones here) are the policy's: the sampler's, up to float noise — not
    # the zeros that were sent.
    for g in groups[:2]:
        for s in g["samples"]:
            seq = s["sequences"][0]
            want = [lp for lp, m_ in zip(seq["logprobs"], seq["mask"]) if m_ == 1]
            got = result.token_logprobs[s["trajectory_id"]].sequences[0]
            assert len(got) == len(want) and max(abs(a - b) for a, b in zip(got, want)) < 0.05
    assert any("lora_B" in k and v.abs().sum() > 0 for k, v in adapter_weights(store, "recomputed", 1).items())

    # Step 2, two mini-epochs: the first again has ratio 1 against the moved policy; the second measures its
    # ratio against the policy the step started from (not against itself), so its tokens move off 1.
    result = train_step_sync(store, make_request("recomputed", 2, rec, epsilon=0.0, epsilon_high=0.0,
                                                 mini_epochs=2, learning_rate=1e-2))
    assert 0.4 < result.metrics.clip_fraction <= 0.5, result.metrics


def test_recomputed_and_sampled_sequences_in_one_micro_batch(store, groups):
    """Mixed rows: recomputed ones take the policy's logprobs, sampled ones keep theirs, and probs_corr (sampler
    against trainer) reads only the sampled ones."""
    from rollbook_engine.trainer.loss import pearson

    mixed = [without_logprobs(groups[:1])[0], groups[1]]
    result = train_step_sync(store, make_request("recomputed-mixed", 1, mixed, micro_batch_size=8))
    olds, news = [], []
    for s in groups[1]["samples"]:
        seq = s["sequences"][0]
        olds += [lp for lp, m in zip(seq["logprobs"], seq["mask"]) if m == 1]
        news += result.token_logprobs[s["trajectory_id"]].sequences[0]
    assert result.metrics.probs_corr == pytest.approx(pearson(torch.tensor(olds).exp(), torch.tensor(news).exp()),
                                                      abs=1e-3)
    for s in groups[0]["samples"]:
        got = result.token_logprobs[s["trajectory_id"]].sequences[0]
        assert got and all(lp < 0 for lp in got)


def test_recomputed_logprobs_must_be_zero(store, groups, client):
    rec = without_logprobs(groups[:1])
    rec[0]["samples"][2]["sequences"][0]["logprobs"][-1] = -0.5
    with pytest.raises(BadRequest) as e:
        check_request(store, make_request("recomputed-bad", 1, rec))
    last = len(rec[0]["samples"][2]["sequences"][0]["logprobs"]) - 1
    assert e.value.field == f"groups.0.samples.2.sequences.0.logprobs.{last}"
    assert "recomputed_logprobs" in str(e.value)
    r = client.post("/train", json=make_request("recomputed-bad", 1, rec).model_dump())
    assert r.status_code == 422 and r.json()["field"] == f"groups.0.samples.2.sequences.0.logprobs.{last}", r.text
    # A prompt position counts too: the whole sequence's logprobs are the trainer's business.
    rec = without_logprobs(groups[:1])
    rec[0]["samples"][0]["sequences"][0]["logprobs"][0] = -1.0
    with pytest.raises(BadRequest) as e:
        check_request(store, make_request("recomputed-bad", 1, rec))
    assert e.value.field == "groups.0.samples.0.sequences.0.logprobs.0"
