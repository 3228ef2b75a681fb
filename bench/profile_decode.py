"""Where a CPU decode step's time goes: the transformers forward vs the lean Llama forward, plus sampling.

Run with the engine's venv:  gpu-runner/engine/.venv/bin/python bench/profile_decode.py [--batch 1 16]
For each batch size: a prompt prefilled once, then --steps decode steps through each path (base model, the
store's PeftModel as served), timed per token and profiled with torch.profiler; aten time is grouped into
matmuls, attention, other ops, and the rest of the wall time is Python/dispatch overhead. Sampling
(nucleus + logprob of the token) and the tokenizer decode a stop-string check costs are timed on their own.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu-runner" / "engine"))

from rollbook_engine.backends.decode_llama import LeanLlama  # noqa: E402
from rollbook_engine.backends.decode_step import BASE, HFRunner, LeanRunner  # noqa: E402
from rollbook_engine.backends.transformers_backend import _sample_tokens  # noqa: E402
from rollbook_engine.model_store import ModelStore  # noqa: E402

MATMUL = {"aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear", "mkldnn::_linear_pointwise"}
ATTN = {"aten::_scaled_dot_product_flash_attention_for_cpu", "aten::_scaled_dot_product_attention_math",
        "aten::scaled_dot_product_attention"}


def run_steps(runner, first: torch.Tensor, steps: int) -> torch.Tensor:
    tokens = first
    for _ in range(steps):
        tokens = runner.step(tokens).argmax(-1)
    return tokens


def measure(name: str, make_runner, prompts, steps: int) -> None:
    names = [BASE] * len(prompts)
    times = []
    for _ in range(3):
        runner = make_runner()
        with torch.inference_mode():
            first = runner.start(prompts, names).argmax(-1)
            t = time.perf_counter()
            run_steps(runner, first, steps)
            times.append((time.perf_counter() - t) / steps)
    runner = make_runner()
    with torch.inference_mode():
        first = runner.start(prompts, names).argmax(-1)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            t = time.perf_counter()
            run_steps(runner, first, steps)
            wall = time.perf_counter() - t
    ops = [e for e in prof.key_averages()]
    self_us = {e.key: e.self_cpu_time_total for e in ops}
    total = sum(self_us.values())
    mm = sum(v for k, v in self_us.items() if k in MATMUL)
    attn = sum(v for k, v in self_us.items() if k in ATTN)
    calls = sum(e.count for e in ops) / steps
    step_ms = statistics.median(times) * 1000
    wall_us = wall * 1e6
    print(f"  {name:12s} {step_ms:7.1f} ms/step = {1000 / step_ms * len(prompts):6.1f} tok/s | "
          f"{calls:6.0f} aten calls/step | matmul {mm / wall_us:4.0%}  attention {attn / wall_us:4.0%}  "
          f"other ops {(total - mm - attn) / wall_us:4.0%}  python/dispatch {max(0.0, 1 - total / wall_us):4.0%}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, nargs="+", default=[1, 16])
    p.add_argument("--steps", type=int, default=32)
    args = p.parse_args()
    store = ModelStore()
    tok = store.tokenizer
    lean = LeanLlama(store.model)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for b in args.batch:
        prompts = [tok.apply_chat_template([{"role": "user", "content": f"Write a long story about topic {i}."}],
                                           add_generation_prompt=True, tokenize=True, return_dict=False)
                   for i in range(b)]
        print(f"batch {b}:")
        with store.use_adapter(None) as model:
            measure("transformers", lambda: HFRunner(model, tok.pad_token_id, store.device, True), prompts,
                    args.steps)
            measure("lean", lambda: LeanRunner(lean, tok.pad_token_id, store.device, args.steps + 8), prompts,
                    args.steps)
        logits = torch.randn(b, lean.embed.shape[0])
        gens = [torch.Generator().manual_seed(i) for i in range(b)]
        for top_p in (1.0, 0.9):
            t = time.perf_counter()
            for _ in range(20):
                chosen = _sample_tokens(logits, torch.ones(b), torch.full((b,), top_p), gens)
                (logits.gather(1, chosen[:, None])[:, 0] - torch.logsumexp(logits, -1)).tolist()
            print(f"  sampling top_p={top_p}: {(time.perf_counter() - t) / 20 * 1000:.2f} ms/step")
        ids = list(range(1000, 1128))
        t = time.perf_counter()
        for _ in range(20):
            for _ in range(b):
                tok.decode(ids, skip_special_tokens=True)
        print(f"  stop-string check (decode 128 tokens per row): {(time.perf_counter() - t) / 20 * 1000:.2f} ms/step")


if __name__ == "__main__":
    main()
