"""Shared pytest setup for the engine: never reach a model hub, skip `gpu` tests without CUDA, and one real
engine served over HTTP for the tests that talk to it as clients do."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from dataclasses import dataclass

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The engines served here are open unless a test passes its own settings (test_engine_token.py): a token
# exported by `npm test`'s setup must not lock the other tests out.
os.environ.pop("ENGINE_TOKEN", None)


# The backend under test: the engine's own choice (ROLLBOOK_BACKEND, server.select_backend). `npm test` runs the
# suite once as is (transformers on CPU) and its `conformance` modules again with ROLLBOOK_BACKEND=vllm in the
# vLLM venv (scripts/test.sh): the same assertions on both; where a backend differs for good, the test says so
# beside the check, with the reason, through BACKEND.
BACKEND = "vllm" if os.environ.get("ROLLBOOK_BACKEND") == "vllm" else "transformers"


def pytest_configure(config):
    if BACKEND == "vllm":
        # Asked for vLLM: a venv without it must fail here, never quietly test the transformers backend.
        import vllm  # noqa: F401


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@contextlib.contextmanager
def template_swapped(served, template: str):
    """The served engine answering with `template` as its chat template (a format's test template), the
    tokenizer's own restored after: for a module-scoped fixture over the shared `served` engine."""
    tok = served.store.tokenizer
    before = tok.chat_template
    tok.chat_template = template
    try:
        yield served
    finally:
        tok.chat_template = before


@dataclass
class Served:
    url: str
    client: object  # httpx.Client on url
    store: object  # the ModelStore behind it


@contextlib.contextmanager
def serve_store(store, timeout_s: float = 300, settings=None):
    """The real app over `store`, served by uvicorn on a free port in a background thread; yields (url,
    client) once /health says the model is loaded, and stops the server after. `settings`: EngineSettings
    (default: from the environment)."""
    import httpx
    import uvicorn

    from rollbook_engine.server import create_app

    app = create_app(store.base_model_name, store_factory=lambda _name: store, settings=settings)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, timeout=timeout_s) as client:
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                try:
                    if client.get("/health").json()["status"] == "ok":
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
            # The engine serves with the backend under test (a fallback would test the other one).
            served_by = client.get("/health").json().get("backend")
            assert served_by in (BACKEND, None), f"the engine serves with {served_by!r}, the tests expect {BACKEND!r}"
            yield url, client
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def served(tmp_path_factory):
    """The real app (SmolLM2-135M on CPU) served by uvicorn on a free port, in a background thread."""
    from rollbook_engine.model_store import ModelStore

    store = ModelStore(runs_dir=tmp_path_factory.mktemp("served-runs"))
    with serve_store(store) as (url, client):
        yield Served(url, client, store)


def write_lora_checkpoint(store, path, rank: int = 4) -> None:
    """A LoRA checkpoint with non-zero B (so it visibly changes the output), in PEFT's on-disk layout."""
    import torch
    from peft import LoraConfig, get_peft_model_state_dict
    from safetensors.torch import save_file

    cfg = LoraConfig(r=rank, lora_alpha=16, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    store.model.add_adapter("scratch", cfg)
    with torch.no_grad():
        gen = torch.Generator().manual_seed(0)
        for name, p in store.model.named_parameters():
            if "lora_B" in name and "scratch" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.05)
    path.mkdir(parents=True)
    save_file(get_peft_model_state_dict(store.model, adapter_name="scratch"), str(path / "adapter_model.safetensors"))
    cfg.base_model_name_or_path = store.base_model_name
    cfg.save_pretrained(str(path))
    store.model.delete_adapter("scratch")


def own_run(store, run_id: str, workspace_id: str) -> None:
    """Record `workspace_id` as the run's owner, as the runner does when a run starts (run-owner.ts)."""
    import json

    folder = store.runs_dir / run_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "workspace.json").write_text(json.dumps({"workspace_id": workspace_id}) + "\n")
