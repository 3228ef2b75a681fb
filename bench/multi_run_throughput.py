"""Many runs on one engine: three concurrent runs' sampling vs one run alone (issue 9, ">= 2x one run alone").

Run with the engine's venv:  gpu-runner/engine/.venv/bin/python bench/multi_run_throughput.py [--reps 3]
It writes three LoRA checkpoints (`runA@1`, `runB@1`, `runC@1`, random non-zero B so each run samples
differently) into a temporary runs dir, starts `python -m rollbook_engine` on it (a free port), and measures:

- alone:    run A's sampling by itself;
- together: runs A, B and C at once, each with its own adapter, the same workload each.

A run's sampling is what the run loop does: `--steps` steps, each `--rollouts` chat completions in flight at
once (config default: groups_per_step 4 x rollouts_per_group 4, max_concurrency 16), the next step after the
whole step is back. Each run sends `user: <run>` as the runner does (fair share). Same prompts and seeds
alone and together, so run A samples the same tokens both ways (give or take batching numerics).
Throughput = completion tokens / wall time; the figure is together / alone, median of `--reps`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_throughput import TOKEN, TOPICS, start_engine  # noqa: E402 - the bench folder is not a package

ENGINE_DIR = Path(__file__).resolve().parents[1] / "gpu-runner" / "engine"
RUNS = ["runA", "runB", "runC"]


def write_checkpoints(model_name: str, runs_dir: Path) -> None:
    """One LoRA checkpoint per run, in the layout the trainer writes (runs/<run>/checkpoints/0001)."""
    sys.path.insert(0, str(ENGINE_DIR))
    import torch
    from peft import LoraConfig, get_peft_model

    from rollbook_engine import model_loader

    base, _tok = model_loader.load(model_name, torch.device("cpu"), torch.float32)
    cfg = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"], lora_dropout=0.0)
    peft_model = get_peft_model(base, cfg)
    for seed, run in enumerate(RUNS):
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, p in peft_model.named_parameters():
                if "lora_B" in name:
                    p.copy_(torch.randn(p.shape, generator=gen) * 0.02)
        peft_model.save_pretrained(str(runs_dir / run / "checkpoints" / "0001"))


def body(run: str, step: int, i: int, max_tokens: int) -> dict:
    return {"model": f"{run}@1", "user": run, "max_tokens": max_tokens, "temperature": 1.0,
            "seed": 1000 * step + i,
            "messages": [{"role": "user", "content": f"Write a short poem about {TOPICS[(step + i) % len(TOPICS)]}."}]}


async def sample_run(client: httpx.AsyncClient, run: str, steps: int, rollouts: int, max_tokens: int) -> int:
    tokens = 0
    for step in range(steps):
        async def one(i: int) -> int:
            r = await client.post("/v1/chat/completions", json=body(run, step, i, max_tokens))
            r.raise_for_status()
            return r.json()["usage"]["completion_tokens"]

        tokens += sum(await asyncio.gather(*[one(i) for i in range(rollouts)]))
    return tokens


async def measure(url: str, runs: list[str], args) -> tuple[int, float, dict]:
    async with httpx.AsyncClient(base_url=url, timeout=1800, headers={"authorization": f"Bearer {TOKEN}"}) as client:
        before = (await client.get("/health")).json().get("stats", {})
        t = time.perf_counter()
        tokens = sum(await asyncio.gather(*[sample_run(client, r, args.steps, args.rollouts, args.max_tokens)
                                            for r in runs]))
        wall = time.perf_counter() - t
        after = (await client.get("/health")).json().get("stats", {})
    return tokens, wall, {k: after.get(k, 0) - before.get(k, 0) for k in ("batches", "joined_rows")} | {
        "largest_batch": after.get("largest_batch")}


async def warm_up(url: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=600, headers={"authorization": f"Bearer {TOKEN}"}) as client:
        # Loads the three adapters and pays the first forward's one-off costs before anything is timed.
        await asyncio.gather(*[client.post("/v1/chat/completions", json=body(r, 99, 0, 2)) for r in RUNS])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="SmolLM2-135M-Instruct")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=2, help="sampling steps per run")
    parser.add_argument("--rollouts", type=int, default=16, help="requests in flight per run and step")
    parser.add_argument("--max-tokens", type=int, default=32)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="rollbook-multirun-") as tmp:
        runs_dir = Path(tmp)
        write_checkpoints(args.model, runs_dir)
        os.environ["ROLLBOOK_RUNS_DIR"] = str(runs_dir)
        proc, url = start_engine(args.model)
        try:
            asyncio.run(warm_up(url))
            print(f"engine {url} model={args.model}: {args.steps} steps x {args.rollouts} concurrent requests "
                  f"per run, max_tokens {args.max_tokens}, temperature 1")
            ratios = []
            for rep in range(1, args.reps + 1):
                load = os.getloadavg()[0]
                a_tokens, a_wall, a_stats = asyncio.run(measure(url, RUNS[:1], args))
                t_tokens, t_wall, t_stats = asyncio.run(measure(url, RUNS, args))
                alone, together = a_tokens / a_wall, t_tokens / t_wall
                ratios.append(together / alone)
                print(f"rep {rep} (load {load:.1f}): alone {a_tokens} tokens in {a_wall:.1f}s = {alone:.1f} tok/s "
                      f"{a_stats} | 3 runs together {t_tokens} tokens in {t_wall:.1f}s = {together:.1f} tok/s "
                      f"{t_stats} | {together / alone:.2f}x")
            print(f"median together/alone: {statistics.median(ratios):.2f}x over {len(ratios)} reps "
                  f"(load average now {os.getloadavg()[0]:.1f})")
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
