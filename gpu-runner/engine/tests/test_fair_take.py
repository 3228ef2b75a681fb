"""The transformers backend's fair share, without a model: `_take` hands batch slots by run first, then by
rollout within the run (the runner sends OpenAI `user` = "<run id>/<rollout id>"). A rollout that queues
many rows (a tight ctx.chat loop) cannot take its siblings' slots, and a run with many rollouts cannot take
another run's. Fake rows on a fake store: fast, no timing."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
import torch

from rollbook_engine.backends.transformers_backend import TransformersBackend, _Row, fair_key

BASE = "base"


@pytest.fixture()
def backend():
    loop = asyncio.new_event_loop()
    store = SimpleNamespace(eos_token_ids=[0], device=torch.device("cpu"), base_model_name=BASE, max_loaded_adapters=4)
    b = TransformersBackend(store, max_batch=8, gather_ms=0)  # type: ignore[arg-type]
    b._loop = loop  # type: ignore[attr-defined]
    yield b
    loop.close()


def queue(b: TransformersBackend, tenant: str, n: int) -> list[_Row]:
    rows = [_Row(BASE, tenant, [1], 4, 1.0, 1.0, 0, [], b._loop.create_future()) for _ in range(n)]  # type: ignore[attr-defined]
    b._pending.extend(rows)
    return rows


def tenants(rows: list[_Row]) -> list[str]:
    return [r.tenant for r in rows]


def test_fair_key_splits_run_and_rollout():
    assert fair_key("run-1/run-1:s3:g0:r2") == ("run-1", "run-1:s3:g0:r2")
    assert fair_key("run-1") == ("run-1", "")  # an older runner's key: one run, one rollout
    assert fair_key("SmolLM2-135M-Instruct") == ("SmolLM2-135M-Instruct", "")


def test_a_looping_rollout_does_not_take_its_siblings_slots(backend):
    # The looper queued 20 rows first; its three siblings one each, later.
    queue(backend, "A/loop", 20)
    for r in ("A/r1", "A/r2", "A/r3"):
        queue(backend, r, 1)
    batch = backend._take(4)
    assert sorted(tenants(batch)) == ["A/loop", "A/r1", "A/r2", "A/r3"]
    # What is left stays queued, in order: the looper's other 19 rows.
    assert tenants(list(backend._pending)) == ["A/loop"] * 19


def test_runs_share_first_then_rollouts_within_a_run(backend):
    # Run A has four rollouts with rows queued, run B one rollout: B gets half the batch, not a fifth.
    for r in ("A/r1", "A/r2", "A/r3", "A/r4"):
        queue(backend, r, 3)
    queue(backend, "B/r1", 6)
    batch = backend._take(8)
    assert tenants(batch).count("B/r1") == 4
    assert sorted(t for t in tenants(batch) if t.startswith("A/")) == ["A/r1", "A/r2", "A/r3", "A/r4"]


def test_rows_already_running_count_against_their_run_and_rollout(backend):
    # A batch is running with three rows of A/loop and one of B/x: joining rows go to B and A's other rollout.
    running = queue(backend, "A/loop", 3) + queue(backend, "B/x", 1)
    backend._pending.clear()
    queue(backend, "A/loop", 5)
    queue(backend, "A/other", 1)
    queue(backend, "B/x", 5)
    joined = backend._take(4, running)
    # B has 1 running vs A's 3: B takes two slots to reach 3, then A/other (the rollout with none) and B again
    # or A: at 3 vs 3 the tie goes to the run whose oldest row waited longest (A's rows were queued first).
    assert tenants(joined).count("A/loop") == 0
    assert "A/other" in tenants(joined)
    assert tenants(joined).count("B/x") >= 2


def test_cancelled_rows_leave_the_queue(backend):
    rows = queue(backend, "A/r1", 2)
    rows[0].cancelled = True
    other = queue(backend, "A/r2", 1)
    batch = backend._take(8)
    assert batch == [rows[1], other[0]]
    assert not backend._pending


def test_api_calls_of_a_workspace_are_one_share_beside_a_run(backend):
    # /api/v1 sends user "api:<workspace>/<caller's user>" (features/openai-api/server/api-limits.ts): twenty
    # callers with twenty user names queued first are one run's share, so a training run still gets half.
    for i in range(20):
        queue(backend, f"api:ws1/caller-{i}", 2)
    for r in ("run-1/r1", "run-1/r2"):
        queue(backend, r, 4)
    batch = backend._take(8)
    assert sum(t.startswith("run-1/") for t in tenants(batch)) == 4
    assert sum(t.startswith("api:ws1/") for t in tenants(batch)) == 4
