"""The engine's settings: every variable it reads, with the names, defaults and spellings it always had."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollbook_engine.settings import EngineSettings


def test_defaults_with_nothing_set():
    s = EngineSettings.from_env({})
    assert (s.engine_host, s.engine_port, s.model, s.backend) == ("127.0.0.1", 8100, None, "auto")
    assert (s.runs_dir, s.model_cache, s.max_loaded_adapters, s.max_context_tokens) == (None, None, 4, 0)
    assert (s.max_batch, s.gather_ms, s.join_inflight, s.lean_decode, s.packed_weights) == (32, 5, True, None, True)
    assert (s.exit_with_parent, s.rank, s.local_rank) == (False, None, None)


def test_each_variable_reaches_its_field():
    s = EngineSettings.from_env({
        "ROLLBOOK_ENGINE_HOST": "0.0.0.0", "ROLLBOOK_ENGINE_PORT": "9000", "ROLLBOOK_MODEL": "m",
        "ROLLBOOK_BACKEND": "vllm", "ROLLBOOK_RUNS_DIR": "/r", "ROLLBOOK_MODEL_CACHE": "/c",
        "ROLLBOOK_MAX_LOADED_ADAPTERS": "2", "ROLLBOOK_MAX_CONTEXT_TOKENS": "512", "ROLLBOOK_MAX_BATCH": "8",
        "ROLLBOOK_GATHER_MS": "0.5", "RANK": "1", "LOCAL_RANK": "0",
    })
    assert (s.engine_host, s.engine_port, s.model, s.backend) == ("0.0.0.0", 9000, "m", "vllm")
    assert (s.runs_dir, s.model_cache) == (Path("/r"), Path("/c"))
    assert (s.max_loaded_adapters, s.max_context_tokens, s.max_batch, s.gather_ms) == (2, 512, 8, 0.5)
    assert (s.rank, s.local_rank) == (1, 0)


@pytest.mark.parametrize("raw, exit_with_parent, off_switch, lean", [
    ("1", True, True, True),
    ("0", False, False, False),
    ("yes", False, True, None),  # neither spelling: the switch keeps its default (lean decode: automatic)
])
def test_switches_keep_their_spelling(raw, exit_with_parent, off_switch, lean):
    s = EngineSettings.from_env({"ROLLBOOK_EXIT_WITH_PARENT": raw, "ROLLBOOK_JOIN_INFLIGHT": raw,
                                 "ROLLBOOK_PACKED_WEIGHTS": raw, "ROLLBOOK_LEAN_DECODE": raw})
    assert (s.exit_with_parent, s.join_inflight, s.packed_weights, s.lean_decode) == (
        exit_with_parent, off_switch, off_switch, lean)


def test_a_bad_number_names_its_variable():
    with pytest.raises(ValueError, match="ROLLBOOK_MAX_BATCH='many'"):
        EngineSettings.from_env({"ROLLBOOK_MAX_BATCH": "many"})


def test_path_settings_resolve_from_the_repository_whatever_the_cwd(monkeypatch, tmp_path):
    # The engine runs in gpu-runner/engine: `.env.example`'s ROLLBOOK_RUNS_DIR=runs is the repository's runs/,
    # the folder the runner reads its checkpoints from, not gpu-runner/engine/runs.
    repo = Path(__file__).resolve().parents[3]
    monkeypatch.chdir(tmp_path)
    s = EngineSettings.from_env({"ROLLBOOK_RUNS_DIR": "runs", "ROLLBOOK_MODEL_CACHE": "~/.cache/rollbook/models"})
    assert s.runs_dir == repo / "runs"
    assert s.model_cache == Path.home() / ".cache" / "rollbook" / "models"
    assert EngineSettings.from_env({"ROLLBOOK_RUNS_DIR": "/srv/runs"}).runs_dir == Path("/srv/runs")
