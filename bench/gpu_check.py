"""The GPU figures of scripts/gpu-check.sh, as one table: a bf16 GRPO step (Rollbook's trainer, and TRL's
GRPOTrainer on the same batch when TRL is installed), peak GPU memory of each, the step's probs_corr
(sampler vs trainer logprobs), and sampling throughput of the engine's transformers backend at 1 and 16
streams. vLLM is not installable on the lent machines; the table says so.

    python bench/gpu_check.py [--steps 3] [--model-dir DIR] [--cpu]

The model: SmolLM2-135M-Instruct from the model cache when it is there (ROLLBOOK_MODEL_CACHE or
~/.cache/rollbook/models, what `npm run setup` converts). Otherwise, with --model-dir pointing at its
config and tokenizer files only (a few MB, what a device call can carry: see docs/benchmarks.md "GPU"), a
model of the SAME SHAPE with random weights is built in a temporary model cache: time, memory and probs_corr
are those of the real shape; rewards and text mean nothing, and the table says "random weights".
--cpu runs the same on the CPU with fewer tokens (to check the script on a machine without a GPU).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "gpu-runner" / "engine"))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

MODEL = "SmolLM2-135M-Instruct"
MARKER = ".rollbook-converted-v1"  # model_loader._CACHE_MARKER: a cache entry the loader trusts
RANDOM = ".rollbook-random-weights"  # written beside MARKER when the weights are random (the table says so)


def model_source(model_dir: str | None) -> str:
    """'cached' when the converted model is in the cache; else builds a same-shape random model from model_dir."""
    cache = Path(os.environ.get("ROLLBOOK_MODEL_CACHE") or Path.home() / ".cache" / "rollbook" / "models")
    if (cache / MODEL / MARKER).exists():
        return "random weights (same shape)" if (cache / MODEL / RANDOM).exists() else "cached weights"
    if not model_dir:
        sys.exit(f"no {MODEL} in the model cache ({cache}) and no --model-dir with its config and tokenizer")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    # Built into ROLLBOOK_MODEL_CACHE when it is set (so a second script can reuse it), else a temporary folder.
    tmp = Path(os.environ["ROLLBOOK_MODEL_CACHE"]) if os.environ.get("ROLLBOOK_MODEL_CACHE") else Path(tempfile.mkdtemp(prefix="rollbook-gpu-model-"))
    dest = tmp / MODEL
    dest.mkdir(parents=True, exist_ok=True)
    for f in Path(model_dir).iterdir():
        if f.is_file() and not f.name.endswith((".safetensors", ".bin", ".gguf")):
            shutil.copy(f, dest / f.name)
    config = AutoConfig.from_pretrained(dest)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(dest, safe_serialization=True)
    (dest / MARKER).write_text("ok\n")
    (dest / RANDOM).write_text("config and tokenizer of SmolLM2, weights from torch.manual_seed(0)\n")
    os.environ["ROLLBOOK_MODEL_CACHE"] = str(tmp)
    return "random weights (same shape)"


def sampling_throughput(store, streams: int, max_tokens: int) -> float:
    """Completion tokens per second of `streams` concurrent requests on the transformers backend."""
    from rollbook_engine.backends.base import GenerationRequest
    from rollbook_engine.backends.transformers_backend import TransformersBackend

    prompt = store.tokenizer.apply_chat_template([{"role": "user", "content": "Write a long story about a lighthouse."}],
                                                 add_generation_prompt=True, tokenize=True, return_dict=False)
    prompt = list(prompt["input_ids"] if hasattr(prompt, "input_ids") or isinstance(prompt, dict) else prompt)
    backend = TransformersBackend(store)
    reqs = [GenerationRequest(model=store.base_model_name, prompt_token_ids=prompt, max_tokens=max_tokens,
                              temperature=1.0, n=1, seed=i, stop=[]) for i in range(streams)]

    async def run():
        try:
            t0 = time.perf_counter()
            outs = await asyncio.gather(*(backend.generate([r]) for r in reqs))
            return sum(len(o[0][0].token_ids) for o in outs) / (time.perf_counter() - t0)
        finally:
            await backend.close()

    return asyncio.run(run())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--model-dir")
    ap.add_argument("--cpu", action="store_true", help="run on the CPU (to check the script without a GPU)")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--prepare-model", action="store_true",
                    help="only make sure a model is in a cache (building the random same-shape one when needed) and "
                         "print that cache folder: scripts/gpu-check.sh points the GPU tests at it")
    args = ap.parse_args()
    source = model_source(args.model_dir)
    if args.prepare_model:
        print(os.environ.get("ROLLBOOK_MODEL_CACHE") or Path.home() / ".cache" / "rollbook" / "models")
        return

    import torch

    from rollbook_engine.model_store import ModelStore
    from train_step_vs_trl import bench_rollbook, bench_trl, sample_batch

    cuda = torch.cuda.is_available() and not args.cpu
    if not cuda and not args.cpu:
        sys.exit("no CUDA device (pass --cpu to check the script on the CPU)")
    device = torch.device("cuda" if cuda else "cpu")
    card = torch.cuda.get_device_name(0) if cuda else "cpu"
    max_tokens = 64 if cuda else 16
    store = ModelStore(runs_dir=Path(tempfile.mkdtemp(prefix="rollbook-gpu-check-")), device=device)
    batch = sample_batch(store, max_tokens)

    rows: list[tuple[str, str]] = [("device", f"{card} (torch {torch.__version__}, {store.dtype})"), ("model", f"{MODEL}, {source}")]
    figures: dict[str, object] = {"device": card, "model_source": source, "dtype": str(store.dtype)}

    def peak_reset() -> None:
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()

    def peak_gib() -> float | None:
        return torch.cuda.max_memory_allocated() / 2**30 if cuda else None

    peak_reset()
    walls, _cpus, _saves, first, init_lora = bench_rollbook(store, batch, args.steps)
    ours_peak = peak_gib()
    ours = statistics.median(walls)
    rows.append((f"GRPO step, Rollbook (4×4 rollouts, LoRA r=8, median of {args.steps})", f"{ours:.3f} s"))
    rows.append(("peak GPU memory, Rollbook step", f"{ours_peak:.2f} GiB" if ours_peak is not None else "n/a (cpu)"))
    figures.update(rollbook_step_s=ours, rollbook_peak_gib=ours_peak)
    probs = first_step_probs_corr(store, batch)
    rows.append(("probs_corr (sampler vs trainer logprobs, first pass)", f"{probs:.5f}"))
    figures["probs_corr"] = probs

    try:
        import trl

        peak_reset()
        trl_walls, _, (trl_loss, trl_norm) = bench_trl(store, batch, args.steps, device, init_lora)
        trl_peak = peak_gib()
        rows.append((f"GRPO step, TRL {trl.__version__} (same batch)", f"{statistics.median(trl_walls):.3f} s"))
        rows.append(("peak GPU memory, TRL step", f"{trl_peak:.2f} GiB" if trl_peak is not None else "n/a (cpu)"))
        rows.append(("step 1 loss / grad_norm, Rollbook vs TRL (same adapter, same batch)",
                     f"{first.loss:+.5f} / {first.grad_norm:.4f} vs {trl_loss:+.5f} / {trl_norm:.4f}"))
        figures.update(trl_step_s=statistics.median(trl_walls), trl_peak_gib=trl_peak, rollbook_step1_loss=first.loss,
                       trl_step1_loss=trl_loss, rollbook_step1_grad_norm=first.grad_norm, trl_step1_grad_norm=trl_norm)
    except ImportError:
        rows.append(("GRPO step, TRL", "not installed on this machine (pip install -r bench/requirements-bench.txt)"))

    for streams in (1, 16):
        tps = statistics.median(sampling_throughput(store, streams, max_tokens) for _ in range(3))
        rows.append((f"sampling, transformers backend, {streams} stream{'s' if streams > 1 else ''} (median of 3)", f"{tps:.0f} tok/s"))
        figures[f"sampling_tok_s_{streams}"] = tps
    rows.append(("sampling, vLLM", "not measured: vLLM cannot be installed on the lent machines (no registry)"))

    width = max(len(k) for k, _ in rows)
    print("\n| check | figure |\n|---|---|")
    for k, v in rows:
        print(f"| {k.ljust(width)} | {v} |")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


def first_step_probs_corr(store, batch) -> float:
    """probs_corr of a fresh adapter's first step (LoRA B = 0: the policy is the sampler's model): the agreement
    of the trainer's and the sampler's logprobs on the same tokens, before any update moves the policy."""
    from rollbook_engine.trainer.trainer import train_step_sync
    from train_step_vs_trl import rollbook_request

    return float(train_step_sync(store, rollbook_request(1, *batch, run_id="gpu-check-probs")).metrics.probs_corr)


if __name__ == "__main__":
    main()
