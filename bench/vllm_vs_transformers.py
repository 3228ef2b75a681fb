"""The engine's two inference backends on the same machine in one run: vLLM (fp32 and bf16) vs transformers.

    gpu-runner/engine/.venv/bin/python bench/vllm_vs_transformers.py [--repeats 3] [--json out.json]

Needs both engine venvs (`ROLLBOOK_WITH_VLLM=1 bash scripts/setup.sh`). For each backend it starts the engine
(`python -m rollbook_engine` in that backend's venv, with a token, as the runner does), then, per repeat:

- trains one GRPO step of run `bench` over HTTP from 16 rows it sampled (the wall time of POST /train, which on
  vLLM includes whatever vLLM does around the trainer's lock: sleeping where the platform can);
- serves the new checkpoint `bench@<step>` once (the first request on a new adapter: vLLM loads the LoRA; its
  latency over a steady request's is the cost of serving each new step's adapter);
- samples 1 stream and 16 concurrent streams from that checkpoint (LoRA on), max_tokens 64, temperature 1
  (completion tokens / wall time), and 16 streams of the base model (LoRA enabled, no adapter in the batch).

Prints medians over the repeats and the load average at start and end; the table in docs/benchmarks.md
("vLLM and the transformers backend") is this script's output.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
ENGINE_DIR = ROOT / "gpu-runner" / "engine"
MODEL = "SmolLM2-135M-Instruct"
TOKEN = secrets.token_hex(32)
WORKSPACE = "bench"
RUN = "bench"
HEADERS = {"authorization": f"Bearer {TOKEN}", "x-rollbook-workspace": WORKSPACE}
TOPICS = ["the sea", "a cat", "mountains", "coffee", "rain", "the moon", "trains", "a library",
          "winter", "bees", "a lighthouse", "bread", "the desert", "a violin", "autumn", "robots"]
MAX_TOKENS = 64

BACKENDS = {
    "transformers (fp32)": (".venv", {"ROLLBOOK_BACKEND": "transformers"}),
    "vLLM fp32": (".venv-vllm", {"ROLLBOOK_BACKEND": "vllm", "ROLLBOOK_VLLM_DTYPE": "float32"}),
    "vLLM bf16": (".venv-vllm", {"ROLLBOOK_BACKEND": "vllm", "ROLLBOOK_VLLM_DTYPE": "bfloat16"}),
}


def chat_body(i: int, model: str, max_tokens: int = MAX_TOKENS) -> dict:
    return {"model": model, "max_tokens": max_tokens, "temperature": 1.0, "seed": i, "logprobs": True,
            "return_token_ids": True,
            "messages": [{"role": "user", "content": f"Write a short poem about {TOPICS[i % len(TOPICS)]}."}]}


def start_engine(venv: str, env: dict[str, str], runs_dir: str) -> tuple[subprocess.Popen, str, float]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(ENGINE_DIR / venv / "bin" / "python"), "-m", "rollbook_engine", "--port", str(port), "--model", MODEL],
        cwd=ENGINE_DIR, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "ENGINE_TOKEN": TOKEN, "ROLLBOOK_RUNS_DIR": runs_dir, **env},
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # printed once the model is loaded and the socket listens
        if line.startswith("ENGINE READY"):
            return proc, f"http://127.0.0.1:{port}", time.perf_counter() - t0
    raise RuntimeError(f"engine ({venv}, {env}) exited with {proc.wait()} before it was ready")


async def chat(client: httpx.AsyncClient, body: dict) -> dict:
    r = await client.post("/v1/chat/completions", json=body)
    r.raise_for_status()
    return r.json()


async def streams(client: httpx.AsyncClient, model: str, n: int, seed0: int) -> float:
    """Completion tokens per second of n concurrent requests."""
    t = time.perf_counter()
    bodies = await asyncio.gather(*[chat(client, chat_body(seed0 + i, model)) for i in range(n)])
    return sum(b["usage"]["completion_tokens"] for b in bodies) / (time.perf_counter() - t)


async def train_step(client: httpx.AsyncClient, step: int, model: str) -> float:
    """Sample 2 groups of 8 from `model`, train step `step` on them; the wall time of POST /train."""
    groups = []
    for g in range(2):
        body = {**chat_body(100 * step + g, model, max_tokens=24), "n": 8}
        out = await chat(client, body)
        samples = []
        for i, c in enumerate(out["choices"]):
            p, ids = out["prompt_token_ids"], c["token_ids"]
            lps = [t["logprob"] for t in c["logprobs"]["content"]]
            samples.append({"trajectory_id": f"{step}-{g}-{i}", "reward": float(i % 2), "sequences": [
                {"tokens": p + ids, "mask": [0] * len(p) + [1] * len(ids), "logprobs": [0.0] * len(p) + lps}]})
        groups.append({"samples": samples})
    t = time.perf_counter()
    async with client.stream("POST", "/train", json={"run_id": RUN, "step": step, "base_model": MODEL, "seed": 7,
                                                      "groups": groups, "config": {}}) as r:
        lines = [json.loads(x) async for x in r.aiter_lines() if x]
    wall = time.perf_counter() - t
    if lines[-1].get("type") != "result" or lines[-1]["metrics"]["skipped"]:
        raise RuntimeError(f"train step {step} failed or trained nothing: {lines[-1]}")
    return wall


async def measure(url: str, repeats: int) -> dict:
    async with httpx.AsyncClient(base_url=url, timeout=900, headers=HEADERS) as client:
        await chat(client, chat_body(0, MODEL, 8))  # warm-up: one-off costs of the first forward
        rows: dict[str, list[float]] = {"train_s": [], "first_request_s": [], "steady_request_s": [],
                                        "tok_s_1": [], "tok_s_16": [], "tok_s_16_base": []}
        model = MODEL
        for rep in range(repeats):
            step = rep + 1
            rows["train_s"].append(await train_step(client, step, model))
            model = f"{RUN}@{step}"
            body = chat_body(7, model, 16)
            t = time.perf_counter()
            await chat(client, body)  # the first request on the new adapter
            rows["first_request_s"].append(time.perf_counter() - t)
            t = time.perf_counter()
            await chat(client, body)
            rows["steady_request_s"].append(time.perf_counter() - t)
            rows["tok_s_1"].append(await streams(client, model, 1, 1000 * step))
            rows["tok_s_16"].append(await streams(client, model, 16, 1000 * step + 100))
            rows["tok_s_16_base"].append(await streams(client, MODEL, 16, 1000 * step + 100))  # no adapter in use
        health = (await client.get("/health")).json()
    med = {k: statistics.median(v) for k, v in rows.items()}
    med["adapter_cost_s"] = statistics.median(f - s for f, s in zip(rows["first_request_s"], rows["steady_request_s"]))
    return {"median": med, "all": rows, "stats": health.get("stats", {})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", action="append", help="a backend's name (repeatable); default all")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    out = {"load_start": os.getloadavg(), "cpus": os.cpu_count(), "repeats": args.repeats, "backends": {}}
    for name, (venv, env) in BACKENDS.items():
        if args.only and name not in args.only:
            continue
        with tempfile.TemporaryDirectory(prefix="rollbook-bench-vllm-") as runs:
            (Path(runs) / RUN).mkdir()
            (Path(runs) / RUN / "workspace.json").write_text(json.dumps({"workspace_id": WORKSPACE}) + "\n")
            proc, url, ready_s = start_engine(venv, env, runs)
            try:
                result = asyncio.run(measure(url, args.repeats))
            finally:
                proc.terminate()
                proc.wait(timeout=60)
        result["ready_s"] = ready_s
        out["backends"][name] = result
        m = result["median"]
        print(f"{name:22} ready {ready_s:5.1f} s | 1 stream {m['tok_s_1']:6.1f} tok/s | 16 streams "
              f"{m['tok_s_16']:6.1f} tok/s (base model {m['tok_s_16_base']:6.1f}) | new adapter +{m['adapter_cost_s']:.2f} s | train step {m['train_s']:.1f} s",
              flush=True)
    out["load_end"] = os.getloadavg()
    print(f"load average at start {out['load_start'][0]:.2f}, at end {out['load_end'][0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
