"""`python -m rollbook_engine --host 127.0.0.1 --port 8100 --model SmolLM2-135M-Instruct`.

Logs go to stderr. Once the model is loaded AND the socket is listening, one line `ENGINE READY <port>` is
printed on stdout (flushed), which is what a parent process waits for. If the model cannot be loaded the
process exits with status 1 (after `ENGINE FAILED <reason>` on stderr).

ENGINE_TOKEN (set by the runner that spawns it): every route but /health needs it as a bearer token. Without
it the engine only binds a loopback address (it refuses --host 0.0.0.0 and the like, status 2).
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import os
import sys

import uvicorn

from .model_loader import DEFAULT_MODEL
from .parent_watch import exit_with_parent
from .server import create_app
from .settings import engine_settings


async def serve(host: str, port: int, model: str, store_factory=None) -> int:
    loaded = asyncio.Event()
    failed: list[str] = []

    def on_error(message: str) -> None:
        # A process that cannot serve should exit (non-zero) rather than wait with /health saying "error".
        failed.append(message)
        server.should_exit = True

    app = create_app(model, store_factory=store_factory, on_ready=loaded.set, on_error=on_error)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="info", access_log=False))

    async def announce() -> None:
        await loaded.wait()
        while not server.started:
            await asyncio.sleep(0.05)
        print(f"ENGINE READY {port}", flush=True)

    task = asyncio.create_task(announce())
    try:
        await server.serve()
    finally:
        task.cancel()
    if failed:
        print(f"ENGINE FAILED {failed[0]}", file=sys.stderr, flush=True)
        return 1
    return 0


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_args(prog: str, argv: list[str] | None = None) -> argparse.Namespace:
    settings = engine_settings()
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--host", default=settings.engine_host)
    parser.add_argument("--port", type=int, default=settings.engine_port)
    parser.add_argument("--model", default=settings.model or DEFAULT_MODEL)
    return parser.parse_args(argv)


def refuse_open_host(host: str) -> bool:
    """True (after printing why) when --host reaches beyond this machine without ENGINE_TOKEN."""
    if not _loopback(host) and not engine_settings().engine_token:
        # Beyond this machine an open engine would serve every run's checkpoints and train for anyone.
        print(f"ENGINE FAILED --host {host} reaches beyond this machine: set ENGINE_TOKEN (and give the "
              "runner the same value) or bind 127.0.0.1", file=sys.stderr, flush=True)
        return True
    return False


def setup_process() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a model hub
    exit_with_parent()


def main(argv: list[str] | None = None) -> int:
    args = parse_args("python -m rollbook_engine", argv)
    if refuse_open_host(args.host):
        return 2
    setup_process()
    return asyncio.run(serve(args.host, args.port, args.model))


if __name__ == "__main__":
    sys.exit(main())
