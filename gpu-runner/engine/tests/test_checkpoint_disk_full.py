"""A checkpoint that cannot be saved on a REAL full disk (a small tmpfs mounted over the runs folder; the test
needs root, as this project's CI has, and fails loudly where it cannot mount): the step fails with a reason
that says "disk full", nothing of the checkpoint stays behind (no folder, no temp folder, the newest step
unchanged), and once there is space the same step trains from the previous checkpoint exactly once — its
adapter and optimizer state equal a run that never hit the full disk.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import pytest
import torch
from fastapi import FastAPI
from fastapi.testclient import TestClient
from safetensors.torch import load_file

from rollbook_engine.model_store import ModelStore
from rollbook_engine.train_routes import router
from rollbook_engine.trainer import checkpoints as ck
from rollbook_engine.trainer.trainer import train_step_sync
from test_trainer import make_request, sample_groups

# A checkpoint of SmolLM2-135M's rank-8 LoRA with its AdamW state is ~30 MB: room for a few.
TMPFS_SIZE = "160m"


@pytest.fixture(scope="module")
def small_disk():
    mnt = Path(tempfile.mkdtemp(prefix="rollbook-small-disk-"))
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(mnt)], capture_output=True, text=True)
    if res.returncode != 0:
        # Loudly: a disk-full test that silently passes where it cannot fill a disk proves nothing.
        pytest.fail(f"cannot mount a {TMPFS_SIZE} tmpfs at {mnt} for the full-disk test (needs root or CAP_SYS_ADMIN): {res.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
        mnt.rmdir()


def fill(folder: Path) -> Path:
    """Write a file until the disk says ENOSPC (then top the last block up byte by byte)."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:
        for size in (1 << 20, 4096, 1):
            chunk = b"\0" * size
            try:
                while True:
                    f.write(chunk)
            except OSError as e:
                assert e.errno == 28, e
    return filler


@pytest.fixture(scope="module")
def store(small_disk):
    return ModelStore(runs_dir=small_disk / "runs")


@pytest.fixture(scope="module")
def groups(store):
    return sample_groups(store)[:1]  # one group of four: the point is the save, not the step


def test_a_checkpoint_on_a_full_disk_fails_the_step_honestly_and_the_step_is_redone_from_the_previous_one(store, groups, small_disk):
    with TestClient(_app(store)) as client:
        _full_disk_step(store, groups, small_disk, client)


def _full_disk_step(store, groups, small_disk, client):
    # The reference: the same two steps on a disk with room.
    train_step_sync(store, make_request("ref", 1, groups))
    train_step_sync(store, make_request("ref", 2, groups))

    train_step_sync(store, make_request("full", 1, groups))
    filler = fill(small_disk)
    try:
        body = make_request("full", 2, groups).model_dump()
        with client.stream("POST", "/train", json=body) as r:
            assert r.status_code == 200
            lines = [json.loads(x) for x in r.iter_lines() if x]
        last = lines[-1]
        assert last["type"] == "error", last
        # What the runner turns into "disk full on runner <name>: training step 2 failed: …".
        assert last["message"].startswith("disk full: checkpoint 0002 of run full could not be saved"), last["message"]
        assert "resume" in last["message"]
        root = ck.checkpoints_root(store, "full")
        assert sorted(p.name for p in root.iterdir()) == ["0001"]  # no 0002, no .tmp-*
        assert ck.newest_step(store, "full") == 1
    finally:
        filler.unlink()

    # Space again: step 2 is the next step, trained from checkpoint 1 (not from the half-updated memory).
    res = train_step_sync(store, make_request("full", 2, groups))
    assert res.checkpoint.step == 2
    mine, ref = (load_file(str(store.checkpoint_dir(run, 2) / ck.ADAPTER_WEIGHTS)) for run in ("full", "ref"))
    assert mine.keys() == ref.keys()
    for k in ref:
        assert torch.equal(mine[k], ref[k]), k
    opt_mine, opt_ref = (ck.read_optimizer(store.checkpoint_dir(run, 2)) for run in ("full", "ref"))
    for i, s in opt_ref["state"].items():
        assert int(opt_mine["state"][i]["step"]) == int(s["step"]) == 2
        assert torch.equal(opt_mine["state"][i]["exp_avg"], s["exp_avg"])


def _app(store):
    app = FastAPI()
    app.state.store = store
    app.include_router(router)
    return app


def test_the_disk_full_reason_is_found_when_the_writer_hides_the_errno(tmp_path, monkeypatch):
    """torch.save says only "file write failed": the free space decides."""
    from rollbook_engine.trainer import checkpoints

    def fail(*_a, **_k):
        raise RuntimeError("[enforce fail at inline_container.cc:603] . PytorchStreamWriter failed writing file data/0: file write failed")

    monkeypatch.setattr(checkpoints.torch, "save", fail)
    monkeypatch.setattr(checkpoints, "_free_bytes", lambda _p: 0)
    final = tmp_path / "run-x" / "checkpoints" / "0003"
    with pytest.raises(checkpoints.CheckpointNotSaved) as e:
        checkpoints.write_checkpoint(final, {"w": torch.zeros(2)}, _Cfg(), {"state": {}}, {"step": 3})
    assert str(e.value).startswith("disk full: checkpoint 0003 of run run-x could not be saved"), str(e.value)
    assert not final.exists() and not any(p.name.startswith(".tmp-") for p in final.parent.iterdir())
    # Not a full disk: the error stays what it was.
    monkeypatch.setattr(checkpoints, "_free_bytes", lambda _p: 10 << 30)
    with pytest.raises(RuntimeError, match="file write failed"):
        checkpoints.write_checkpoint(final, {"w": torch.zeros(2)}, _Cfg(), {"state": {}}, {"step": 3})


class _Cfg:
    def save_pretrained(self, folder):
        (Path(folder) / ck.ADAPTER_CONFIG).write_text("{}")
