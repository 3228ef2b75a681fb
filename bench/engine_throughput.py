"""Engine throughput: 16 concurrent chat completions vs the same 16 one at a time (max_tokens 32).

Run with the engine's venv:  gpu-runner/engine/.venv/bin/python bench/engine_throughput.py [--url URL]
Without --url it starts `python -m rollbook_engine` on a free port as a subprocess and stops it after.
Same prompts and seeds both ways, so both runs sample the same number of tokens give or take batching
numerics; throughput is completion tokens / wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ENGINE_DIR = Path(__file__).resolve().parents[1] / "gpu-runner" / "engine"
N, MAX_TOKENS = 16, 32
# The engine refuses every route but /health without its token, as the runner runs it.
TOKEN = secrets.token_hex(32)
TOPICS = ["the sea", "a cat", "mountains", "coffee", "rain", "the moon", "trains", "a library",
          "winter", "bees", "a lighthouse", "bread", "the desert", "a violin", "autumn", "robots"]


def body(i: int, model: str) -> dict:
    return {"model": model, "max_tokens": MAX_TOKENS, "temperature": 1.0, "seed": i,
            "messages": [{"role": "user", "content": f"Write a short poem about {TOPICS[i % len(TOPICS)]}."}]}


def start_engine(model: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rollbook_engine", "--port", str(port), "--model", model],
        cwd=ENGINE_DIR, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "ENGINE_TOKEN": TOKEN},
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # the engine prints this once the model is loaded and the socket listens
        if line.startswith("ENGINE READY"):
            return proc, f"http://127.0.0.1:{port}"
    raise RuntimeError(f"engine exited with {proc.wait()} before it was ready")


async def run(url: str, model: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=600, headers={"authorization": f"Bearer {TOKEN}"}) as client:
        async def one(i: int) -> int:
            r = await client.post("/v1/chat/completions", json=body(i, model))
            r.raise_for_status()
            return r.json()["usage"]["completion_tokens"]

        await one(0)  # warm-up (first forward pays one-off costs)
        t = time.perf_counter()
        seq_tokens = 0
        for i in range(N):
            seq_tokens += await one(i)
        seq_s = time.perf_counter() - t

        before = (await client.get("/health")).json().get("stats", {}).get("batches")
        t = time.perf_counter()
        conc_tokens = sum(await asyncio.gather(*[one(i) for i in range(N)]))
        conc_s = time.perf_counter() - t
        after = (await client.get("/health")).json().get("stats", {}).get("batches")
        health = (await client.get("/health")).json()

    seq_tps, conc_tps = seq_tokens / seq_s, conc_tokens / conc_s
    print(f"engine {url} backend={health['backend']} device={health['device']} model={model}")
    print(f"sequential: {N} requests, {seq_tokens} tokens in {seq_s:.1f}s = {seq_tps:.1f} tok/s")
    batches = f" in {after - before} batches" if before is not None and after is not None else ""
    print(f"concurrent: {N} requests{batches}, {conc_tokens} tokens in {conc_s:.1f}s = {conc_tps:.1f} tok/s")
    print(f"speed-up (concurrent / sequential tok/s): {conc_tps / seq_tps:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", help="an engine already running; default: start one")
    parser.add_argument("--model", default="SmolLM2-135M-Instruct")
    args = parser.parse_args()
    proc, url = (None, args.url) if args.url else start_engine(args.model)
    try:
        asyncio.run(run(url, args.model))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
