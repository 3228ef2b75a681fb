"""Many runs on one engine (issue 9, deliverable 3, trainer side), on the real SmolLM2-135M on CPU.

Every run here is compared with the same run trained ALONE on a ledger with room for everything: its
checkpoints (adapter weights and AdamW state) must be bit-identical, however often it was evicted and restored.
lora_dropout > 0 so that a restore that disturbed the step's random stream would show.
"""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import weakref

import pytest
import torch
from safetensors.torch import load_file, save_file

from rollbook_engine.adapter_ledger import AdapterLedger, OverBudget
from rollbook_engine.model_store import ModelStore
from rollbook_engine.trainer.checkpoints import read_optimizer
from rollbook_engine.trainer.tenancy import FifoTurns, estimate_state_bytes, spill_dir
from rollbook_engine.trainer.adapter_cache import forget_run, run_states
from rollbook_engine.trainer.trainer import train_step_sync
from test_trainer import make_request, sample_groups

CONFIG = dict(lora_rank=4, lora_alpha=8, lora_target_modules=["q_proj", "v_proj"], lora_dropout=0.1,
              micro_batch_size=8)
# Three runs: own seeds, own data (one prompt's group of 4 each, kept small: the machine is shared), own lr.
RUNS = {"a": (1, slice(0, 1), 2e-4), "b": (2, slice(1, 2), 3e-4), "c": (3, slice(2, 3), 1e-4)}
STEPS = 2


def request(groups, key: str, run_id: str, step: int, **extra):
    seed, part, lr = RUNS[key]
    req = make_request(run_id, step, groups[part], learning_rate=lr, **CONFIG, **extra)
    return req.model_copy(update={"seed": seed})


def checkpoint(store, run_id: str, step: int) -> tuple[dict, dict]:
    folder = store.checkpoint_dir(run_id, step)
    opt = read_optimizer(folder)
    flat = {f"{i}.{k}": v for i, s in opt["state"].items() for k, v in s.items()}
    return load_file(str(folder / "adapter_model.safetensors")), flat


def assert_identical(got: tuple[dict, dict], want: tuple[dict, dict], what: str) -> None:
    for kind, g, w in (("adapter", got[0], want[0]), ("optimizer", got[1], want[1])):
        assert g.keys() == w.keys(), f"{what}: {kind} keys differ"
        for k in w:
            assert torch.equal(g[k], w[k]), f"{what}: {kind} tensor {k} differs"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return ModelStore(runs_dir=tmp_path_factory.mktemp("tenancy-runs"))


@pytest.fixture(scope="module")
def groups(store):
    return sample_groups(store, max_tokens=12)


@pytest.fixture(scope="module")
def one_state(store) -> int:
    return estimate_state_bytes(store.model.get_base_model(), CONFIG["lora_rank"], CONFIG["lora_target_modules"])


@pytest.fixture(scope="module")
def solo(store, groups):
    """Each run trained alone, steps 1..STEPS, with a budget that holds everything: the reference."""
    store.ledger = AdapterLedger(1 << 40)
    out = {}
    for key in RUNS:
        for step in range(1, STEPS + 1):
            train_step_sync(store, request(groups, key, f"solo-{key}", step))
            out[key, step] = checkpoint(store, f"solo-{key}", step)
        forget_run(store, f"solo-{key}")
    assert store.ledger.evictions == {"train": 0, "serve": 0}
    return out


@pytest.fixture
def tight(store, one_state):
    """A budget with room for ONE run's training state (1.5x), fresh counters."""
    for run in list(run_states(store)):
        forget_run(store, run)
    store.ledger = AdapterLedger(one_state * 3 // 2)
    return store.ledger


def lora_param_count(model) -> int:
    return sum(p.numel() for n, p in model.named_parameters() if ".train:" in n)


def test_three_runs_interleaved_under_a_one_run_budget_match_each_run_alone(store, groups, solo, tight, one_state):
    refs = []
    for step in range(1, STEPS + 1):
        for key in RUNS:
            run = f"il-{key}"
            train_step_sync(store, request(groups, key, run, step))
            if step == 1 and key == "a":
                # Weak references to run a's LoRA weight and AdamW moment: once evicted, nothing may hold them.
                state = run_states(store)[run]
                refs = [weakref.ref(state.params[0][1]),
                        weakref.ref(next(iter(state.optimizer.state.values()))["exp_avg"])]
                del state
            if step == 1 and key == "b":  # b's step evicted a
                gc.collect()
                assert "train:il-a" not in store.model.peft_config and "il-a" not in run_states(store)
                assert all(r() is None for r in refs), "an evicted run's tensors are still referenced"
            # Only this run is resident, and its measured bytes match the estimate reserved before allocating.
            snap = tight.snapshot()
            assert [e["adapter"] for e in snap["resident"]] == [f"train:{run}"], snap
            assert snap["resident"][0]["bytes"] == one_state and not snap["resident"][0]["pinned"]
            assert tight.used_bytes <= tight.budget_bytes, snap
            assert_identical(checkpoint(store, run, step), solo[key, step], f"run {key} step {step}")
    # Every step after the first evicted the previous run; every step 2 restored its run from its checkpoint.
    assert tight.evictions["train"] == len(RUNS) * STEPS - 1
    assert tight.restores == {"checkpoint": len(RUNS), "spill": 0}
    assert tight.spills == 0  # every evicted state equalled its newest checkpoint: dropped, not written
    assert tight.peak_bytes <= tight.budget_bytes
    # Evicted adapters are gone from the shared model: only one run's LoRA parameters remain.
    assert [a for a in store.model.peft_config if a.startswith("train:")] == ["train:il-c"]
    assert lora_param_count(store.model) * 4 * 4 <= one_state


def test_a_state_that_differs_from_its_checkpoint_is_spilled_and_restored_exactly(store, groups, solo, tight):
    """(b) Run a's step-1 checkpoint is rewritten behind the engine's back (another writer on shared storage):
    its in-memory state no longer equals the disk, so eviction spills it; step 2 continues from the spill and
    equals the run trained alone (which continued from memory)."""
    train_step_sync(store, request(groups, "a", "sp-a", 1))
    ckpt = store.checkpoint_dir("sp-a", 1)
    weights = load_file(str(ckpt / "adapter_model.safetensors"))
    save_file({k: torch.zeros_like(v) for k, v in weights.items()}, str(ckpt / "adapter_model.safetensors"))

    train_step_sync(store, request(groups, "b", "sp-b", 1))  # evicts sp-a: not equal to disk -> spilled
    assert tight.spills == 1 and tight.evictions["train"] == 1
    assert json.loads((spill_dir(store, "sp-a") / "spill.json").read_text()) == {"run_id": "sp-a", "step": 1}
    assert "train:sp-a" not in store.model.peft_config

    train_step_sync(store, request(groups, "a", "sp-a", 2))  # restores from the spill, evicting sp-b (dropped)
    assert tight.restores == {"checkpoint": 0, "spill": 1} and tight.spills == 1
    assert_identical(checkpoint(store, "sp-a", 2), solo["a", 2], "spilled run a step 2")
    assert not spill_dir(store, "sp-a").exists()  # the new checkpoint supersedes it
    assert tight.used_bytes <= tight.budget_bytes


def test_a_state_larger_than_the_budget_is_refused_clearly(store, groups, tight):
    store.ledger = AdapterLedger(1024)
    with pytest.raises(OverBudget, match="ROLLBOOK_ADAPTER_MEMORY_MB"):
        train_step_sync(store, request(groups, "a", "too-big", 1))
    assert "train:too-big" not in store.model.peft_config and store.ledger.used_bytes == 0
    assert not store.checkpoint_dir("too-big", 1).exists()


def test_serving_adapters_share_the_ledger(store, groups, solo, tight, one_state):
    """A checkpoint loaded for serving is charged in the same ledger, at its measured size, and a training
    state that needs the room evicts it (least recently used first)."""
    weights_file = store.checkpoint_dir("solo-b", 1) / "adapter_model.safetensors"
    store.ledger = ledger = AdapterLedger(one_state + weights_file.stat().st_size // 2)  # one state, not both
    name = store.resolve_adapter("solo-b@1")
    snap = ledger.snapshot()
    assert [(e["adapter"], e["kind"]) for e in snap["resident"]] == [(name, "serve")]
    assert snap["used_bytes"] == sum(p.numel() * 4 for n, p in store.model.named_parameters() if f".{name}." in n)
    train_step_sync(store, request(groups, "a", "sv-a", 1))
    assert name not in store.model.peft_config and "solo-b@1" not in store.loaded_adapters()
    assert ledger.evictions == {"train": 0, "serve": 1} and ledger.peak_bytes <= ledger.budget_bytes
    assert_identical(checkpoint(store, "sv-a", 1), solo["a", 1], "run a step 1 after evicting a served checkpoint")


# ---- fairness ---------------------------------------------------------------------------------------------


def test_train_turns_are_first_come_first_served():
    async def scenario():
        turns, order = FifoTurns(), []
        release = asyncio.Event()

        async def step(i: int, hold: bool = False):
            async with turns.turn():
                order.append(i)
                if hold:
                    await release.wait()
                await asyncio.sleep(0)

        first = asyncio.create_task(step(0, hold=True))
        await asyncio.sleep(0)
        tasks = [asyncio.create_task(step(i)) for i in range(1, 6)]
        await asyncio.sleep(0)
        tasks[1].cancel()  # a client that gave up while waiting must not block the ones behind it
        assert turns.waiting == 4 and order == [0]  # the cancelled one no longer waits
        release.set()
        await asyncio.gather(first, *tasks, return_exceptions=True)
        return order, turns

    order, turns = asyncio.run(scenario())
    assert order == [0, 1, 3, 4, 5] and turns.served == 5 and not turns.busy


def test_concurrent_http_train_requests_of_three_runs_and_a_failing_one(store, groups, solo, tight):
    """(c) Three runs POST /train at once to one engine server with a one-run budget, and
    a fourth run's step fails (its sampling logprobs make the loss infinite) in between: all three complete
    with checkpoints bit-identical to each run alone, the failure leaves nothing behind."""
    from conftest import serve_store

    def post(client, body, out, key):
        with client.stream("POST", "/train", json=body) as r:
            out[key] = (r.status_code, [json.loads(x) for x in r.iter_lines() if x])

    bad = request(groups, "a", "http-bad", 1).model_dump()
    seq = bad["groups"][0]["samples"][0]["sequences"][0]
    seq["logprobs"] = [-1e30 if m else lp for m, lp in zip(seq["mask"], seq["logprobs"])]
    with serve_store(store) as (_url, client):
        for step in (1,):
            out: dict[str, tuple] = {}
            bodies = {k: request(groups, k, f"http-{k}", step).model_dump() for k in RUNS}
            if step == 1:
                bodies["bad"] = bad
            threads = [threading.Thread(target=post, args=(client, b, out, k)) for k, b in bodies.items()]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for key in RUNS:
                status, lines = out[key]
                assert status == 200 and lines[-1]["type"] == "result", (key, lines[-1])
                assert lines[-1]["checkpoint"]["step"] == step
                assert_identical(checkpoint(store, f"http-{key}", step), solo[key, step], f"http run {key} step {step}")
            if step == 1:
                status, lines = out["bad"]
                assert status == 200 and lines[-1]["type"] == "error" and "non-finite" in lines[-1]["message"]
            ten = client.get("/tenants").json()
            assert ten["used_bytes"] <= ten["budget_bytes"] and ten["peak_bytes"] <= ten["budget_bytes"]
            assert ten["train_queue"]["waiting"] == 0
        assert not store.checkpoint_dir("http-bad", 1).exists() and "train:http-bad" not in store.model.peft_config
        # Each state evicted the one before it; the failing run's too if it came last (then none is left).
        assert len(RUNS) - 1 <= ten["evictions"]["train"] <= len(RUNS)
        assert len(ten["resident"]) <= 1 and all(e["adapter"] in {f"train:http-{k}" for k in RUNS} for e in ten["resident"])
        health = client.get("/health").json()
        assert health["tenancy"]["budget_bytes"] == tight.budget_bytes
