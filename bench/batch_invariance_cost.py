"""What batch-invariant decoding (ROLLBOOK_BATCH_INVARIANT, backends/decode_llama.py) costs: the lean CPU
forward's prefill and decode-step time with it on and off, in one process, alternating (on, off, on, off, …)
so both see the same machine; medians of --reps. The model is the engine's (SmolLM2-135M-Instruct from the
model cache), with a LoRA adapter on every row, as a train run samples.

Run with the engine's venv, from the repository root:
  PYTHONPATH=gpu-runner/engine gpu-runner/engine/.venv/bin/python -u bench/batch_invariance_cost.py \
    [--reps 3] [--steps 24] [--batches 1,4,16]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import torch
from peft import LoraConfig
from rollbook_engine.backends.decode_llama import LeanLlama
from rollbook_engine.backends.decode_step import LeanRunner
from rollbook_engine.model_store import ModelStore

ADAPTER = "cost"
PROMPT_LENS = [38, 41, 44, 36, 40, 47, 39, 42, 45, 37, 43, 46, 35, 48, 40, 41]  # say-the-word-like prompts


def timed(lean: LeanLlama, pad: int, batch: int, invariant: bool, steps: int) -> tuple[float, float]:
    """(prefill seconds, mean decode-step seconds) for `batch` rows with the setting as given."""
    LeanLlama.batch_invariant = property(lambda self: invariant)  # type: ignore[method-assign,assignment]
    prompts = [[1] + [100 + (i * 7 + j) % 5000 for j in range(n - 1)] for i, n in enumerate(PROMPT_LENS[:batch])]
    with torch.inference_mode():
        runner = LeanRunner(lean, pad, torch.device("cpu"), headroom=steps + 1)
        t0 = time.perf_counter()
        runner.start(prompts, [ADAPTER] * batch)
        t1 = time.perf_counter()
        for _ in range(steps):
            runner.step(torch.full((batch,), 28))
        t2 = time.perf_counter()
    return t1 - t0, (t2 - t1) / steps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=24, help="decode steps per measurement")
    ap.add_argument("--batches", default="1,4,16")
    args = ap.parse_args()
    store = ModelStore(runs_dir=tempfile.mkdtemp())
    store.model.add_adapter(ADAPTER, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=[
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]))
    lean = LeanLlama(store.model)
    pad = store.tokenizer.pad_token_id
    print(f"load average at start {os.getloadavg()[0]:.2f}; torch threads {torch.get_num_threads()}")
    print("batch | prefill on / off (ms) | decode step on / off (ms) | step cost")
    for batch in (int(b) for b in args.batches.split(",")):
        runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        timed(lean, pad, batch, True, 2)  # warm the kernels and oneDNN's primitive cache
        timed(lean, pad, batch, False, 2)
        for _ in range(args.reps):
            for inv in (True, False):
                runs[inv].append(timed(lean, pad, batch, inv, args.steps))
        med = {inv: (statistics.median(p for p, _ in r), statistics.median(s for _, s in r)) for inv, r in runs.items()}
        on, off = med[True], med[False]
        print(f"{batch:5d} | {on[0] * 1e3:7.1f} / {off[0] * 1e3:7.1f} | {on[1] * 1e3:7.1f} / {off[1] * 1e3:7.1f} | {on[1] / off[1]:.2f}x")
    print(f"load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
