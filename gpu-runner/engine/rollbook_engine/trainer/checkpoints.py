"""Checkpoint layout on disk: runs/<run>/checkpoints/<step:04d>/.

A checkpoint folder holds
  adapter_config.json + adapter_model.safetensors   the LoRA of this run only (PEFT format, loadable with
                                                     PeftModel.load_adapter by the inference side)
  optimizer.pt                                       AdamW state_dict, so a resumed run continues exactly
  trainer_state.json                                 step, seed, config, metrics
It is written into a hidden temp folder beside the final one and renamed into place, so a crash leaves either
a complete checkpoint or none (the temp folder is swept on the next step). A folder only counts when its
name is all digits and it has trainer_state.json, written last. "The run's step" is the newest such folder,
as in ART.

A save that fails on a full disk removes its temp folder and raises CheckpointNotSaved, "disk full: checkpoint
0003 of run … could not be saved …": the step fails (the trainer drops the run's in-memory state, so the step
is redone from the previous checkpoint once there is space) and the runner names the full disk on the run.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import uuid
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from ..contracts.train import CheckpointInfo

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
OPTIMIZER = "optimizer.pt"
STATE = "trainer_state.json"
_TMP_PREFIX = ".tmp-"


def checkpoints_root(store, run_id: str) -> Path:
    # Ask the store for any step's folder and take its parent, so the layout is defined in one place.
    return Path(store.checkpoint_dir(run_id, 1)).parent


def _dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def list_checkpoints(store, run_id: str) -> list[CheckpointInfo]:
    root = checkpoints_root(store, run_id)
    if not root.is_dir():
        return []
    out = []
    for d in root.iterdir():
        if d.is_dir() and d.name.isdigit() and (d / STATE).is_file():
            out.append(CheckpointInfo(step=int(d.name), path=str(d.resolve()), size_bytes=_dir_size(d)))
    return sorted(out, key=lambda c: c.step)


def newest_step(store, run_id: str) -> int:
    """Step of the newest complete checkpoint, 0 when the run has none."""
    ckpts = list_checkpoints(store, run_id)
    return ckpts[-1].step if ckpts else 0


def sweep_temp(store, run_id: str) -> None:
    """Remove temp folders left by a crash mid-save (only ever called under the store's exclusive lock)."""
    root = checkpoints_root(store, run_id)
    if root.is_dir():
        for d in root.iterdir():
            if d.name.startswith(_TMP_PREFIX):
                shutil.rmtree(d, ignore_errors=True)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class CheckpointNotSaved(Exception):
    """A checkpoint could not be written on a full disk; nothing of it was kept."""


# Below this many free bytes after a failed save, the disk was full even when the writer did not say so
# (torch.save reports only "file write failed"; safetensors' message carries "os error 28").
_FULL_BELOW_BYTES = 1 << 20
_FULL_TEXT = ("No space left on device", "os error 28", "Disk quota exceeded", "os error 122")


def _free_bytes(path: Path) -> int:
    return shutil.disk_usage(path).free


def _disk_full(err: BaseException, folder: Path) -> bool:
    e: BaseException | None = err
    while e is not None:
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if any(t in str(e) for t in _FULL_TEXT):
            return True
        e = e.__cause__ or e.__context__
    try:
        return _free_bytes(folder) < _FULL_BELOW_BYTES
    except OSError:
        return False


def write_checkpoint(
    final: Path,
    adapter_state: dict[str, torch.Tensor],
    adapter_config,
    optimizer_state: dict,
    trainer_state: dict,
) -> CheckpointInfo:
    """Write all files into a temp folder, fsync them, then rename it to `final` in one step."""
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        raise FileExistsError(f"checkpoint {final} already exists")
    tmp = final.parent / f"{_TMP_PREFIX}{final.name}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        save_file({k: v.detach().to("cpu").contiguous() for k, v in adapter_state.items()}, tmp / ADAPTER_WEIGHTS)
        adapter_config.save_pretrained(str(tmp))
        torch.save(optimizer_state, tmp / OPTIMIZER)
        # trainer_state.json last: its presence is what marks a checkpoint complete.
        (tmp / STATE).write_text(json.dumps(trainer_state, indent=2, sort_keys=True))
        for f in tmp.iterdir():
            _fsync(f)
        os.rename(tmp, final)
        _fsync(final.parent)
    except BaseException as err:
        # Asked before the temp folder goes: removing it frees the very space whose lack made the save fail.
        full = isinstance(err, Exception) and _disk_full(err, final.parent)
        shutil.rmtree(tmp, ignore_errors=True)
        if full:
            # No path in the message: it reaches the run's page, the engine's folders need not.
            why = os.strerror(err.errno) if isinstance(err, OSError) and err.errno else str(err)
            raise CheckpointNotSaved(
                f"disk full: checkpoint {final.name} of run {final.parent.parent.name} could not be saved "
                f"({type(err).__name__}: {why}); nothing of it was kept, and the run can resume from its previous "
                "checkpoint once there is space"
            ) from err
        raise
    return CheckpointInfo(step=int(final.name), path=str(final.resolve()), size_bytes=_dir_size(final))


def read_adapter(path: Path) -> tuple[dict, dict[str, torch.Tensor]]:
    """(adapter_config.json as a dict, adapter weights on CPU)."""
    config = json.loads((path / ADAPTER_CONFIG).read_text())
    return config, load_file(str(path / ADAPTER_WEIGHTS))


def read_optimizer(path: Path) -> dict:
    return torch.load(path / OPTIMIZER, map_location="cpu", weights_only=True)


def read_state(path: Path) -> dict:
    return json.loads((path / STATE).read_text())
