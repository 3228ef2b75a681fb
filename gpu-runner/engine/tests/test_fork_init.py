"""A fork's first step starts from another run's checkpoint (TrainRequest.init_from), on the real SmolLM2-135M.

The samples are hand-made token sequences (no sampling: these tests are about where the adapter starts, not
about what it learns), so each step is a few small forward/backward passes on CPU.
"""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

from rollbook_engine.contracts.train import TrainRequest
from rollbook_engine.model_store import ModelStore
from rollbook_engine.trainer.batch import BadRequest
from rollbook_engine.trainer.checkpoints import read_optimizer, read_state
from rollbook_engine.trainer.step_checks import check_request
from rollbook_engine.trainer.trainer import train_step_sync


def groups(rewards: list[float]) -> list[dict]:
    """One group, one short sequence per reward (prompt 3 tokens, 3 sampled)."""
    return [{
        "samples": [
            {
                "trajectory_id": f"t{i}",
                "reward": r,
                "sequences": [{
                    "tokens": [1, 2, 3, 10 + i, 20 + i, 30 + i],
                    "mask": [0, 0, 0, 1, 1, 1],
                    "logprobs": [0.0, 0.0, 0.0, -2.0, -2.0, -2.0],
                }],
            }
            for i, r in enumerate(rewards)
        ]
    }]


LEARNS = [0.0, 1.0, 0.0, 1.0]  # reward variance: an optimiser step happens
FLAT = [0.0, 0.0, 0.0, 0.0]  # no variance: the step is skipped and the adapter saved unchanged


def request(run_id: str, step: int, rewards: list[float], seed: int = 7, init_from: dict | None = None, **config) -> TrainRequest:
    return TrainRequest.model_validate({
        "run_id": run_id, "step": step, "base_model": "SmolLM2-135M-Instruct", "seed": seed,
        "config": {"learning_rate": 1e-3, **config}, "groups": groups(rewards),
        **({"init_from": init_from} if init_from else {}),
    })


def weights(store: ModelStore, run_id: str, step: int) -> dict[str, torch.Tensor]:
    return load_file(str(store.checkpoint_dir(run_id, step) / "adapter_model.safetensors"))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return ModelStore(runs_dir=tmp_path_factory.mktemp("fork-runs"))


@pytest.fixture(scope="module")
def parent(store):
    """A run trained one real step: its LoRA-B is no longer zero."""
    result = train_step_sync(store, request("parent", 1, LEARNS))
    assert not result.metrics.skipped
    w = weights(store, "parent", 1)
    assert any(k.endswith("lora_B.weight") and v.abs().max() > 0 for k, v in w.items())
    return "parent"


def test_fork_starts_from_the_parent_adapter_not_a_fresh_lora(store, parent):
    # Another seed, so a fresh LoRA-A would differ from the parent's; a flat step saves the start unchanged.
    result = train_step_sync(store, request("fork-a", 1, FLAT, seed=99, init_from={"run_id": parent, "step": 1}))
    assert result.metrics.skipped
    mine, theirs = weights(store, "fork-a", 1), weights(store, parent, 1)
    assert mine.keys() == theirs.keys()
    for k in theirs:
        assert torch.equal(mine[k], theirs[k]), k
    # The same flat step without init_from is a fresh LoRA: B is zero, so it is not the parent's.
    train_step_sync(store, request("fresh", 1, FLAT, seed=99))
    assert all(v.abs().max() == 0 for k, v in weights(store, "fresh", 1).items() if k.endswith("lora_B.weight"))
    # The lineage is written into the checkpoint, and carried into the fork's later checkpoints.
    assert read_state(store.checkpoint_dir("fork-a", 1))["init_from"] == {"run_id": parent, "step": 1, "load_optimizer": False}
    train_step_sync(store, request("fork-a", 2, LEARNS, seed=99, init_from={"run_id": parent, "step": 1}))
    assert read_state(store.checkpoint_dir("fork-a", 2))["init_from"]["run_id"] == parent
    assert read_state(store.checkpoint_dir("fresh", 1))["init_from"] is None


def test_optimizer_state_only_when_asked(store, parent):
    parent_opt = read_optimizer(store.checkpoint_dir(parent, 1))
    assert parent_opt["state"], "the parent's AdamW has moments"
    # Default: a fork is a new run, so AdamW starts fresh (a skipped step leaves it without moments).
    train_step_sync(store, request("fork-noopt", 1, FLAT, init_from={"run_id": parent, "step": 1}))
    assert read_optimizer(store.checkpoint_dir("fork-noopt", 1))["state"] == {}
    # load_optimizer: the parent's moments come along exactly.
    train_step_sync(store, request("fork-opt", 1, FLAT, init_from={"run_id": parent, "step": 1, "load_optimizer": True}))
    mine = read_optimizer(store.checkpoint_dir("fork-opt", 1))["state"]
    assert mine.keys() == parent_opt["state"].keys()
    for i, s in parent_opt["state"].items():
        assert torch.equal(mine[i]["exp_avg"], s["exp_avg"]) and torch.equal(mine[i]["exp_avg_sq"], s["exp_avg_sq"])


def _refusal(store, req: TrainRequest) -> BadRequest:
    with pytest.raises(BadRequest) as e:
        check_request(store, req)
    return e.value


def test_refusals_name_the_field(store, parent, tmp_path):
    missing = _refusal(store, request("fork-x", 1, LEARNS, init_from={"run_id": parent, "step": 5}))
    assert (missing.field, missing.status) == ("init_from.step", 404)
    assert "no checkpoint at step 5" in str(missing)

    gone = _refusal(store, request("fork-x", 1, LEARNS, init_from={"run_id": "never-ran", "step": 1}))
    assert gone.field == "init_from.step"

    own = _refusal(store, request("fork-x", 1, LEARNS, init_from={"run_id": "fork-x", "step": 1}))
    assert own.field == "init_from.run_id"

    bad_id = _refusal(store, request("fork-x", 1, LEARNS, init_from={"run_id": "../etc", "step": 1}))
    assert bad_id.field == "init_from.run_id"

    rank = _refusal(store, request("fork-x", 1, LEARNS, init_from={"run_id": parent, "step": 1}, lora_rank=4))
    assert rank.field == "config.lora_rank" and "trained with" in str(rank)

    # A checkpoint trained on another base model (copied here with its state edited) does not fit.
    other = store.checkpoint_dir("other-base", 1)
    shutil.copytree(store.checkpoint_dir(parent, 1), other)
    state = json.loads((other / "trainer_state.json").read_text())
    (other / "trainer_state.json").write_text(json.dumps({**state, "base_model": "Qwen/Qwen2.5-0.5B-Instruct"}))
    base = _refusal(store, request("fork-x", 1, LEARNS, init_from={"run_id": "other-base", "step": 1}))
    assert base.field == "init_from" and "Qwen2.5-0.5B-Instruct" in str(base)


def test_init_from_is_ignored_once_the_run_has_its_own_checkpoint(store, parent):
    # A resumed fork sends init_from again; at step 2 it continues from its own step 1, not the parent's.
    train_step_sync(store, request("fork-r", 1, LEARNS, init_from={"run_id": parent, "step": 1}))
    check_request(store, request("fork-r", 2, FLAT, init_from={"run_id": parent, "step": 9}))  # no refusal
    train_step_sync(store, request("fork-r", 2, FLAT, init_from={"run_id": parent, "step": 1}))
    a, b = weights(store, "fork-r", 1), weights(store, "fork-r", 2)
    assert all(torch.equal(a[k], b[k]) for k in a)
