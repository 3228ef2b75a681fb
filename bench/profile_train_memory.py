"""Where one Rollbook training step's memory goes: torch.profiler with profile_memory over a step of the
calculator batch of bench/train_memory.py (one micro-batch of it by default, to keep the profile quick).

    gpu-runner/engine/.venv/bin/python bench/profile_train_memory.py [--rows 8] [--case calculator]

Prints the ops that allocate the most (self CPU/CUDA memory: allocations minus frees made inside the op;
positive = memory the op leaves held, e.g. saved activations), which SDPA kernel ran, and the RSS before,
at peak (ru_maxrss) and after the step.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_memory as tm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", default="calculator", choices=list(tm.CASES))
    ap.add_argument("--rows", type=int, default=8, help="rows of the batch to train on (one micro-batch of 8)")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--no-profiler", action="store_true",
                    help="only the RSS figures (the profiler's own bookkeeping costs memory and time)")
    args = ap.parse_args()

    import psutil
    from rollbook_engine.contracts.train import TrainRequest
    from rollbook_engine.model_store import ModelStore
    from rollbook_engine.trainer.trainer import train_step_sync
    from torch.profiler import ProfilerActivity, profile

    path = tm.batch_file(args.case)
    batch = json.loads(path.read_text())
    rows = [r for g in batch["groups"] for r in g][: args.rows]
    # One group of `rows` with rewards that vary, so every row trains.
    groups = [{"samples": [{"trajectory_id": f"r{i}", "reward": float(i % 2), "sequences": [
        {"tokens": r["tokens"], "mask": r["mask"], "logprobs": r["logprobs"]}]} for i, r in enumerate(rows)]}]
    store = ModelStore(runs_dir=Path(tempfile.mkdtemp(prefix="rollbook-prof-")))
    req = TrainRequest.model_validate({"run_id": "prof", "step": 1, "base_model": store.base_model_name, "seed": 0,
                                       "config": {**tm.CONFIG, "micro_batch_size": 8}, "groups": groups})
    cuda = store.device.type == "cuda"
    before = psutil.Process().memory_info().rss
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    if args.no_profiler:
        train_step_sync(store, req)
    else:
        with profile(activities=acts, profile_memory=True, record_shapes=True) as prof:
            train_step_sync(store, req)
        key = "self_cuda_memory_usage" if cuda else "self_cpu_memory_usage"
        print(prof.key_averages().table(sort_by=key, row_limit=args.top))
        sdpa = sorted({e.key for e in prof.key_averages() if "scaled_dot_product" in e.key or "attention" in e.key.lower()})
        print("attention kernels that ran:", sdpa)
    after = psutil.Process().memory_info().rss
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"RSS before {before / 1e9:.2f} GB, peak (ru_maxrss) {peak / 1e9:.2f} GB, after {after / 1e9:.2f} GB")


if __name__ == "__main__":
    main()
