"""One training step on 2 processes (torchrun, gloo, CPU) equals the same step in one process: DDP through
the engine's worker group over HTTP, and FSDP (decoder layers sharded) through tests/fsdp_step_harness.py.

The real path: `python -m torch.distributed.run --nproc-per-node 2 -m rollbook_engine.trainer.distributed_worker`
serves the engine from rank 0; POST /train goes to rank 0, which hands the request to rank 1; each rank runs
its half of the micro-batches on the real SmolLM2-135M and they sum their LoRA gradients. The checkpoint
rank 0 writes must match the one a single-process step writes for the same request: the adapter within
1e-5 absolute (fp32), and AdamW's moments within 1e-4 relative to the tensor's largest entry — relative,
because exp_avg_sq after one step is ~(1-β2)·g², far below any absolute tolerance that could catch a wrong
gradient. AdamW's first update is nearly lr·sign(g) whatever the gradient's scale, so a mean instead of a
sum over ranks would pass an adapter-only comparison; the moments catch it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import torch
from safetensors.torch import load_file

from rollbook_engine.model_store import ModelStore
from rollbook_engine.trainer.checkpoints import read_optimizer
from rollbook_engine.trainer.trainer import train_step_sync
from test_trainer import make_request

ENGINE_ROOT = Path(__file__).resolve().parents[1]
ADAPTER_ATOL = 1e-5
MOMENT_RTOL = 1e-4
# micro_batch_size 2 over 8 sequences: 4 micro-batches, 2 per rank.
CONFIGS = {
    "plain": dict(micro_batch_size=2),
    # LoRA dropout draws random numbers per micro-batch: equal only because each micro-batch seeds its own
    # draws (distributed.micro_batch_seed), whichever rank runs it.
    "dropout": dict(micro_batch_size=2, lora_dropout=0.1),
}
# FSDP: 3 micro-batches over 2 ranks, so rank 1 runs a zero-weight filler to keep the sharded layers'
# collectives in lockstep (distributed.DataParallel.share).
FSDP_RUN, FSDP_CONFIG = "sharded", dict(micro_batch_size=3)
PROMPTS = ["Say hi.", "Name a colour."]
ANSWERS = ["Hello there, nice to meet you!", "Blue.", "Hi!", "Good morning to you.",
           "Red, like a ripe tomato.", "Green", "I would say purple.", "Yellow is a colour."]


def model_scored_groups(store: ModelStore) -> list[dict]:
    """2 groups of 4 chat answers; each answer's sampling logprobs are the base model's own (one forward, no
    generation: cheap on a busy CPU), so the first step's ratios are 1 and every trained token has a gradient."""
    groups = []
    for g, prompt in enumerate(PROMPTS):
        samples = []
        for i, answer in enumerate(ANSWERS[4 * g : 4 * g + 4]):
            chat = [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
            head = store.tokenizer.apply_chat_template(chat[:1], add_generation_prompt=True, tokenize=False)
            full = store.tokenizer.apply_chat_template(chat, tokenize=False)
            p = store.tokenizer(head, add_special_tokens=False)["input_ids"]
            tokens = p + store.tokenizer(full[len(head):], add_special_tokens=False)["input_ids"]
            with torch.no_grad(), store.model.disable_adapter():
                logits = store.model(input_ids=torch.tensor([tokens])).logits[0, :-1].float()
            lp = torch.log_softmax(logits, -1).gather(-1, torch.tensor(tokens[1:]).unsqueeze(-1)).squeeze(-1)
            samples.append({
                "trajectory_id": f"{g}-{i}", "reward": float(i % 2),
                "sequences": [{"tokens": tokens, "mask": [0] * len(p) + [1] * (len(tokens) - len(p)),
                               "logprobs": [0.0] + lp.tolist()}],
            })
        groups.append({"samples": samples})
    return groups


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """The reference: the request's groups and the checkpoints one process writes for them."""
    # One thread, as torchrun gives each rank (OMP_NUM_THREADS=1): on a loaded 2-core machine two spinning
    # intra-op threads make this reference step many times slower.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        store = ModelStore(runs_dir=tmp_path_factory.mktemp("single-runs"))
        groups = model_scored_groups(store)
        for run, cfg in {**CONFIGS, FSDP_RUN: FSDP_CONFIG}.items():
            train_step_sync(store, make_request(run, 1, groups, **cfg))
    finally:
        torch.set_num_threads(threads)
    return store, groups


@pytest.fixture(scope="module")
def worker_group(tmp_path_factory):
    """A 2-rank torchrun worker group serving the engine; yields (client, runs_dir, log path)."""
    runs = tmp_path_factory.mktemp("ddp-runs")
    log_path = tmp_path_factory.mktemp("ddp-log") / "torchrun.log"
    port = _free_port()
    env = {**os.environ, "ROLLBOOK_RUNS_DIR": str(runs), "ROLLBOOK_TRAIN_PARALLEL": "ddp", "HF_HUB_OFFLINE": "1"}
    env.pop("ENGINE_TOKEN", None)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
             "-m", "rollbook_engine.trainer.distributed_worker", "--host", "127.0.0.1", "--port", str(port)],
            cwd=ENGINE_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=300) as client:
            deadline = time.monotonic() + 300
            while True:
                assert proc.poll() is None, f"torchrun exited {proc.returncode}:\n{log_path.read_text()[-3000:]}"
                assert time.monotonic() < deadline, f"engine never ready:\n{log_path.read_text()[-3000:]}"
                try:
                    if client.get("/health").json()["status"] == "ok":
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.5)
            yield client, runs, log_path
    finally:
        proc.send_signal(signal.SIGTERM)  # torchrun passes it to both ranks
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _train_over_http(client: httpx.Client, body: str) -> list[dict]:
    with client.stream("POST", "/train", content=body, headers={"content-type": "application/json"}) as r:
        assert r.status_code == 200, r.read()
        return [json.loads(line) for line in r.iter_lines() if line]


def _moments(ckpt: Path) -> dict[str, torch.Tensor]:
    state = read_optimizer(ckpt)["state"]
    return {f"{i}.{k}": v for i, s in state.items() for k, v in s.items() if torch.is_tensor(v) and v.numel() > 1}


@pytest.mark.parametrize("run", list(CONFIGS))
def test_two_rank_step_equals_single_process_step(single, worker_group, run):
    store, groups = single
    client, runs, log_path = worker_group
    lines = _train_over_http(client, make_request(run, 1, groups, **CONFIGS[run]).model_dump_json())
    assert lines[-1]["type"] == "result", lines[-1]
    # Rank 0 reports its own share: 2 of the 4 micro-batches; rank 1 ran the other 2.
    progress = [line for line in lines if line["type"] == "progress"]
    assert [p["micro_batch"] for p in progress] == [1, 2] and {p["micro_batches"] for p in progress} == {2}, progress
    deadline = time.monotonic() + 30  # rank 1's line can trail rank 0's answer by a moment
    while f"RANK 1 TRAINED run={run} step=1" not in log_path.read_text():
        assert time.monotonic() < deadline, log_path.read_text()[-3000:]
        time.sleep(0.2)

    assert_same_checkpoint(store.checkpoint_dir(run, 1), runs / run / "checkpoints" / "0001")
    # Metrics come from both ranks' micro-batches (gathered), so they match the single-process step too.
    single_metrics = json.loads((store.checkpoint_dir(run, 1) / "trainer_state.json").read_text())["metrics"]
    dist_metrics = lines[-1]["metrics"]
    assert dist_metrics["trained_tokens"] == single_metrics["trained_tokens"]
    for key in ("loss", "grad_norm", "entropy", "probs_corr"):
        assert dist_metrics[key] == pytest.approx(single_metrics[key], rel=1e-4, abs=1e-6), key


def test_fsdp_sharded_two_rank_step_equals_single_process_step(single, tmp_path):
    store, groups = single
    request = tmp_path / "requests.jsonl"
    request.write_text(make_request(FSDP_RUN, 1, groups, **FSDP_CONFIG).model_dump_json() + "\n")
    runs = tmp_path / "runs"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ENGINE_ROOT)}
    env.pop("ENGINE_TOKEN", None)
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         str(ENGINE_ROOT / "tests" / "fsdp_step_harness.py"), str(runs), str(request)],
        cwd=ENGINE_ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    # Both ranks hold only their shard of the decoder (every decoder parameter is a DTensor) and both trained.
    for rank in (0, 1):
        assert f"RANK {rank} SHARDED 271" in out, out[-3000:]
        assert f"RANK {rank} TRAINED run={FSDP_RUN} step=1" in out, out[-3000:]
    assert_same_checkpoint(store.checkpoint_dir(FSDP_RUN, 1), runs / FSDP_RUN / "checkpoints" / "0001")


def assert_same_checkpoint(single_ckpt: Path, ddp_ckpt: Path) -> None:
    a = load_file(str(single_ckpt / "adapter_model.safetensors"))
    b = load_file(str(ddp_ckpt / "adapter_model.safetensors"))
    assert a.keys() == b.keys() and a
    worst = max((a[k] - b[k]).abs().max().item() for k in a)
    assert worst <= ADAPTER_ATOL, f"adapter differs by {worst}"
    # The step did something: LoRA's B starts at zero, and every B moved.
    assert all(b[k].abs().max() > 0 for k in b if "lora_B" in k)

    ma, mb = _moments(single_ckpt), _moments(ddp_ckpt)
    assert ma.keys() == mb.keys() and ma
    worst_rel = 0.0
    for k in ma:
        # LoRA's A gets no gradient on step 1 (B is zero), so its moments are exactly 0 on both sides.
        scale = ma[k].abs().max().item()
        diff = (ma[k] - mb[k]).abs().max().item()
        assert diff <= MOMENT_RTOL * scale, f"{k}: differs by {diff} (largest entry {scale})"
        worst_rel = max(worst_rel, diff / scale if scale else 0.0)
    assert sum(1 for k in ma if ma[k].abs().max() > 0) >= len(ma) // 2, "too few moments moved: B's must have"
    print(f"\n{ddp_ckpt.parent.parent.name}: adapter max abs diff {worst:.3g}, moments max rel diff {worst_rel:.3g}")
