"""llama.cpp as the CPU sampler of a training run (issue 21, deliverable 4): served with a LoRA checkpoint, does
it sample tokens whose logprobs the trainer agrees with (probs_corr >= 0.99, the engine's own check), and how
fast is it with the adapter against without?

Setup once: bash bench/setup_llamacpp.sh   (llama-server, the F32 GGUF of SmolLM2, the convert scripts)
Run:        gpu-runner/engine/.venv/bin/python bench/llamacpp_lora_eval.py [--prompts 8] [--tokens 64] [--reps 3]

1. A LoRA on SmolLM2-135M-Instruct as Rollbook's trainer makes one (r=8, alpha 16, all seven projections), with
   lora_B drawn N(0, --b-std) instead of PEFT's zeros, so the adapter moves the distribution as a trained one
   does (the script prints how far: the mean KL from the base and how many greedy tokens it changes).
2. Converted with llama.cpp's own `convert_lora_to_gguf.py` (F32), served by `llama-server --lora`.
3. Each prompt is sampled by llama-server at temperature 1 from the plain distribution (top_k 0, top_p 1,
   min_p 0, no repeat penalty) with `n_probs` so it returns the sampled token's logprob; the trainer's side is
   the PEFT model's forward (fp32, the same weights) over prompt + completion. probs_corr = Pearson of the two
   probabilities over all sampled tokens (trainer.py's definition). The same for the base model without LoRA.
4. Throughput: single-stream decode tokens/s as llama-server reports them (`timings.predicted_per_second`),
   with and without the adapter, medians of --reps.
Prints one table and writes --json. Ports: --port, else BENCH_LLAMA_PORT, else a free one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "gpu-runner" / "engine"))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from cpu_decode_vs_llamacpp import free_ports  # noqa: E402  (bench/ on the path first)
from rollbook_engine.trainer.loss import pearson  # noqa: E402  (the trainer's own probs_corr)
CACHE = Path.home() / ".cache" / "rollbook"
WORK = CACHE / "llama.cpp"
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
TOPICS = ["the sea", "a cat", "mountains", "coffee", "rain", "the moon", "trains", "a library",
          "winter", "bees", "a lighthouse", "bread", "the desert", "a violin", "autumn", "robots"]


def make_adapter(model, out: Path, b_std: float, seed: int):
    from peft import LoraConfig, get_peft_model

    peft_model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=TARGETS,
                                                  task_type="CAUSAL_LM"))
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * b_std)
    peft_model.save_pretrained(out)
    return peft_model


def convert(adapter_dir: Path, base_dir: Path, out: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{WORK / 'src' / 'gguf-py'}:{WORK / 'convert-deps'}"}
    subprocess.run([sys.executable, str(WORK / "src" / "convert_lora_to_gguf.py"), "--base", str(base_dir),
                    "--outtype", "f32", "--outfile", str(out), str(adapter_dir)], check=True, env=env,
                   stdout=subprocess.DEVNULL)


def start_server(args, lora: Path | None) -> tuple[subprocess.Popen, str]:
    cmd = [str(args.llama_server), "-m", str(args.gguf), "--host", "127.0.0.1", "--port", str(args.port),
           "-t", str(args.threads), "-tb", str(args.threads), "--parallel", "1", "-c", "2048", "--no-webui"]
    if lora is not None:
        cmd += ["--lora", str(lora)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{args.port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server exited: {proc.stderr.read()[-2000:] if proc.stderr else ''}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise SystemExit("llama-server did not become ready in 120 s")


def sample(url: str, prompt_ids: list[int], tokens: int, seed: int) -> tuple[list[int], list[float], float]:
    r = httpx.post(f"{url}/completion", timeout=600, json={
        "prompt": prompt_ids, "n_predict": tokens, "temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0,
        "repeat_penalty": 1.0, "seed": seed, "n_probs": 1, "cache_prompt": False, "ignore_eos": True,
    })
    r.raise_for_status()
    body = r.json()
    probs = body["completion_probabilities"]
    return [p["id"] for p in probs], [p["logprob"] for p in probs], float(body["timings"]["predicted_per_second"])


@torch.no_grad()
def trainer_logprobs(model, prompt_ids: list[int], ids: list[int]) -> torch.Tensor:
    seq = torch.tensor([prompt_ids + ids])
    logits = model(input_ids=seq).logits[0, len(prompt_ids) - 1:-1].float()
    return torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids)[:, None])[:, 0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--b-std", type=float, default=0.02)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--port", type=int, default=int(os.environ.get("BENCH_LLAMA_PORT") or 0) or free_ports(1)[0])
    ap.add_argument("--llama-server", type=Path, default=WORK / "build" / "bin" / "llama-server")
    ap.add_argument("--gguf", type=Path, default=WORK / "SmolLM2-135M-Instruct-f32.gguf")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    for path in (args.llama_server, args.gguf, WORK / "src" / "convert_lora_to_gguf.py"):
        if not path.exists():
            raise SystemExit(f"missing {path}: run bash bench/setup_llamacpp.sh first")
    torch.set_num_threads(args.threads)

    from rollbook_engine import model_loader

    base_dir = model_loader.ensure_local(model_loader.DEFAULT_MODEL)
    model, tok = model_loader.load(model_loader.DEFAULT_MODEL, torch.device("cpu"), torch.float32)
    model.eval()
    prompts = [list(tok.apply_chat_template([{"role": "user", "content": f"Write a long story about {t}."}],
                                            add_generation_prompt=True, tokenize=True, return_dict=False))
               for t in TOPICS[:args.prompts]]

    tmp = Path(tempfile.mkdtemp(prefix="llamacpp-lora-"))
    # The base side's logprobs first (make_adapter wraps the model in place).
    sides: dict[str, dict] = {}
    for side in ("base", "lora"):
        if side == "lora":
            model = make_adapter(model, tmp / "adapter", args.b_std, seed=0)
            model.eval()
            convert(tmp / "adapter", Path(base_dir), tmp / "adapter.gguf")
        proc, url = start_server(args, tmp / "adapter.gguf" if side == "lora" else None)
        try:
            sample(url, prompts[0], 8, 0)  # warm-up
            olds, news, speeds = [], [], []
            for i, p in enumerate(prompts):
                ids, lps, _ = sample(url, p, args.tokens, seed=i)
                olds.append(torch.tensor(lps))
                news.append(trainer_logprobs(model, p, ids))
            for rep in range(args.reps):
                speeds.append(statistics.median(sample(url, p, args.tokens, seed=100 + rep)[2] for p in prompts[:4]))
        finally:
            proc.kill()
            proc.wait()
        old, new = torch.cat(olds), torch.cat(news)
        sides[side] = {"probs_corr": pearson(old.exp(), new.exp()), "max_abs_logprob_diff": float((old - new).abs().max()),
                       "mean_abs_logprob_diff": float((old - new).abs().mean()), "tokens": int(old.numel()),
                       "decode_tok_s": statistics.median(speeds), "decode_tok_s_reps": speeds}

    # How far the adapter moves the model (so an agreement above is not the base's agreeing with itself).
    with torch.no_grad():
        seq = torch.tensor([prompts[0]])
        lora_lp = torch.log_softmax(model(input_ids=seq).logits[0].float(), -1)
        with model.disable_adapter():
            base_lp = torch.log_softmax(model(input_ids=seq).logits[0].float(), -1)
        kl = float((lora_lp.exp() * (lora_lp - base_lp)).sum(-1).mean())
        greedy_changed = float((lora_lp.argmax(-1) != base_lp.argmax(-1)).float().mean())
    load = os.getloadavg()
    print(f"\nadapter: r=8 on {len(TARGETS)} projections, lora_B ~ N(0, {args.b_std}); vs base on prompt 0: "
          f"mean KL {kl:.4f} nats, greedy token changed at {greedy_changed:.1%} of positions")
    print(f"{args.prompts} prompts x {args.tokens} sampled tokens, {args.threads} threads, load {load[0]:.2f}\n")
    print("| side | probs_corr (llama.cpp vs trainer) | mean / max abs logprob diff | decode tok/s (median of reps) |")
    print("| --- | --- | --- | --- |")
    for side, f in sides.items():
        print(f"| {side} | {f['probs_corr']:.5f} | {f['mean_abs_logprob_diff']:.2e} / {f['max_abs_logprob_diff']:.2e} | "
              f"{f['decode_tok_s']:.1f} ({', '.join(f'{x:.1f}' for x in f['decode_tok_s_reps'])}) |")
    if args.json:
        args.json.write_text(json.dumps({"sides": sides, "kl": kl, "greedy_changed": greedy_changed,
                                         "load": load, "args": {k: str(v) for k, v in vars(args).items()}}, indent=2))


if __name__ == "__main__":
    main()
