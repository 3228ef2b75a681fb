"""Which workspace may use a run's checkpoints: the engine's own check, behind the web server's and the runner's.

One engine serves every workspace's runs, and the last process that acts on a model name is the one that must
check it: a parser slip on either side before it (as `<run>@２` was) must still not cross workspaces. So every
request that names a checkpoint names the workspace it acts for (the runner sets WORKSPACE_HEADER from the run's
RunSpec.workspace_id or, on its chat pass-through, from the web server's header), and a checkpoint is served
only when its run's recorded owner is that workspace. The owner is the one the runner recorded when the run
started, before any checkpoint of it existed: runs/<run>/workspace.json, `{"workspace_id": …}`, written once
(gpu-runner/src/loop/run-owner.ts). No owner recorded, no workspace named, another workspace: all read "not
found", never "forbidden" (another workspace's run ids are none of the caller's business).
"""

from __future__ import annotations

import json
from pathlib import Path

from .identifiers import is_identifier

# The same header the web server sets on the runner's chat route: contracts/run.ts RUNNER_WORKSPACE_HEADER
# (tests/test_ownership.py compares the two).
WORKSPACE_HEADER = "x-rollbook-workspace"
OWNER_FILE = "workspace.json"


def request_workspace(headers) -> str | None:
    """The workspace a request acts for: its header when well formed (the shared grammar), else None."""
    value = headers.get(WORKSPACE_HEADER)
    return value if is_identifier("workspace_id", value) else None


def run_owner(runs_dir: Path, run_id: str) -> str | None:
    """The workspace recorded for the run, None when none is (or the run id is not one folder name)."""
    if not is_identifier("run_id", run_id):
        return None
    try:
        value = json.loads((runs_dir / run_id / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    owner = value.get("workspace_id") if isinstance(value, dict) else None
    return owner if isinstance(owner, str) else None


def may_use(runs_dir: Path, run_id: str, workspace: str | None) -> bool:
    """True when a request acting for `workspace` may use run `run_id`'s checkpoints."""
    return workspace is not None and run_owner(runs_dir, run_id) == workspace


def owned_checkpoints(runs_dir: Path, names: list[str], workspace: str | None) -> list[str]:
    """Of `names` (`<run>@<step>`), those a request acting for `workspace` may use (none without one)."""
    return [n for n in names if may_use(runs_dir, n.rsplit("@", 1)[0], workspace)]
