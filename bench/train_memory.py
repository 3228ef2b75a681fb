"""Peak memory of one GRPO step, Rollbook's trainer vs TRL's GRPOTrainer, on the same batch.

    gpu-runner/engine/.venv/bin/python bench/train_memory.py [--runs 3] [--case calculator,single] \
        [--device auto|cpu|cuda] [--sides rollbook,trl]

Cases (SmolLM2-135M-Instruct, fp32 on CPU, bf16 on CUDA; LoRA r=8 on all projections; PPO loss, no KL):
- calculator: the calculator template's shapes. 2 groups x 8 rollouts; each rollout one sequence: the
  template's real prompt (system, calculate tool, one worked exchange, the question: ~400 tokens), the
  tool call (trained), the tool's result (not trained), the answer (trained). Micro-batch 8 as the
  template runs it (it keeps the default micro_batch_size), so one step is 2 micro-batches.
- single: a single-turn task, 4 groups x 8 of a ~40-token question and a 48-token reply, micro-batch 8.
The batch is built once (real chat-templated tokens; sampling logprobs = the base model's own, so the step
starts on-policy) and written to a file both sides read. TRL gets it through `rollout_func` (prompt ids,
completion ids, logprobs; `env_mask` marks the tool result as not trained) and a reward function that
returns the fixed rewards, as in bench/train_step_vs_trl.py.

Each side runs in its own subprocess, one step, with the parent sampling the child's RSS every 20 ms:
`ready` is the child's RSS once its model and trainer are set up (Rollbook: ModelStore; TRL: GRPOTrainer
built), `peak` the highest sample, `after` the child's RSS once the step returned. On CUDA the child also
reports torch.cuda.max_memory_allocated. One table of medians over --runs runs, with the load average.
TRL runs with its own defaults for memory (gradient_checkpointing=True); side `trl-nogc` turns that off.
Rollbook's ready RSS has no prepacked decode copy (this process never samples); an engine that sampled
holds one more copy of the weights (~0.54 GB for this model) on top.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "gpu-runner" / "engine"
sys.path.insert(0, str(ENGINE))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
GB = 1e9
CASES = {
    # groups, group size, micro-batch (rows)
    "calculator": dict(groups=2, group_size=8, micro_batch=8),
    "single": dict(groups=4, group_size=8, micro_batch=8),
}
CONFIG = dict(learning_rate=1e-3, lora_rank=8, lora_alpha=16, lora_dropout=0.0, lora_target_modules=TARGETS,
              loss="ppo", epsilon=0.2, epsilon_high=0.28, scale_rewards=True, beta=0.0, mini_epochs=1)

# --- the calculator template's conversation (templates/calculator/scenario.ts), written out -----------------
SYSTEM = "You are a careful assistant with a calculator. Use the calculate tool for arithmetic, then give the result."
CALC_TOOL = {"type": "function", "function": {
    "name": "calculate",
    "description": 'Evaluate an arithmetic expression with + - * / and parentheses. Arguments: {"expression": "37 * 48"}',
    "parameters": {"type": "object", "properties": {"expression": {
        "type": "string", "description": "the expression, e.g. 37 * 48"}}, "required": ["expression"]}}}
# The template names the tool in tool_choice, so the engine starts the reply with the call up to "arguments":
# (prompt.py's prefill): those tokens are part of the prompt, not trained.
PREFILL = '<tool_call>\n{"name": "calculate", "arguments": '
SINGLE_QUESTIONS = [
    "Dev has 3 bags with 5 cookies in each bag. How many cookies does Dev have in all?",
    "Noah has 9 bags with 9 stamps in each bag. How many stamps does Noah have in all?",
    "Mia reads 7 pages a day for 6 days. How many pages does she read?",
    "A box holds 8 rows of 4 eggs. How many eggs are in the box?",
]


def _call(expr: str, cid: str) -> dict:
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": "calculate", "arguments": json.dumps({"expression": expr})}}]}


def _ids(tokenizer, messages: list[dict], tools, gen: bool) -> list[int]:
    from rollbook_engine.chat_format import render
    from rollbook_engine.contracts.chat import ChatCompletionRequest

    req = ChatCompletionRequest.model_validate({"model": "m", "messages": messages, "tools": tools})
    text = render(tokenizer, req.messages, req.tools, generation_prompt=gen)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def calculator_rows(tokenizer, g: int, i: int) -> tuple[list[int], list[int], list[int]]:
    """(tokens, mask, prompt length) of rollout i of group g: prompt, call (1), tool result (0), answer (1)."""
    a, b = 53 + 9 * g, 31 + 7 * g
    base = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What is 12 * 34?"},
            _call("12 * 34", "call_example"),
            {"role": "tool", "tool_call_id": "call_example", "name": "calculate", "content": "408"},
            {"role": "assistant", "content": "12 * 34 = 408"}, {"role": "user", "content": f"What is {a} * {b}?"}]
    expr = [f"{a} * {b}", f"{a}*{b}", f"({a}) * ({b})", f"{a} x {b}"][i % 4]
    result = str(a * b + (i % 3) * 10)
    answer = [f"{a} * {b} = {result}", f"The result is {result}.", f"{result}", f"It is {result}."][i % 4]
    conv = base + [_call(expr, f"call_{i}")]
    tool = {"role": "tool", "tool_call_id": f"call_{i}", "name": "calculate", "content": result}
    p = len(_ids(tokenizer, base, [CALC_TOOL], True))
    t1 = len(_ids(tokenizer, conv, [CALC_TOOL], False))
    t2 = len(_ids(tokenizer, conv + [tool], [CALC_TOOL], True))
    full = _ids(tokenizer, conv + [tool, {"role": "assistant", "content": answer}], [CALC_TOOL], False)
    p += len(tokenizer(PREFILL, add_special_tokens=False)["input_ids"])
    mask = [0] * p + [1] * (t1 - p) + [0] * (t2 - t1) + [1] * (len(full) - t2)
    return full, mask, p


def single_rows(tokenizer, g: int, i: int) -> tuple[list[int], list[int], list[int]]:
    prompt = _ids(tokenizer, [{"role": "user", "content": SINGLE_QUESTIONS[g % len(SINGLE_QUESTIONS)]}], None, True)
    words = tokenizer(" Let me work it out step by step: the first number times the second is the answer,"
                      " and I add nothing else to it because the question asks for the whole.",
                      add_special_tokens=False)["input_ids"]
    reply = (words * 3)[i : i + 48]
    return prompt + reply, [0] * len(prompt) + [1] * len(reply), len(prompt)


def build_batch(case: str, path: Path) -> None:
    """Rows of `case` with the base model's logprobs of the trained tokens, written to `path` as JSON."""
    import torch

    from rollbook_engine import model_loader

    spec = CASES[case]
    model, tokenizer = model_loader.load(model_loader.DEFAULT_MODEL, torch.device("cpu"), torch.float32)
    make = calculator_rows if case == "calculator" else single_rows
    groups = []
    for g in range(spec["groups"]):
        made = [make(tokenizer, g, i) for i in range(spec["group_size"])]
        width = max(len(t) for t, _, _ in made)
        ids = torch.tensor([t + [0] * (width - len(t)) for t, _, _ in made])
        attn = torch.tensor([[1] * len(t) + [0] * (width - len(t)) for t, _, _ in made])
        with torch.no_grad():  # one right-padded forward per group
            logits = model(input_ids=ids, attention_mask=attn).logits[:, :-1].float()
        lps = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
        rows = []
        for i, ((tokens, mask, p), lp) in enumerate(zip(made, lps)):
            logprobs = [0.0] + [float(v) if m else 0.0 for v, m in zip(lp.tolist(), mask[1:])]
            rows.append({"tokens": tokens, "mask": mask, "logprobs": logprobs, "prompt_len": p,
                         "reward": float(i % 2) + 0.25 * g})
        groups.append(rows)
    path.write_text(json.dumps({"case": case, **spec, "groups": groups}))


def batch_file(case: str) -> Path:
    """The batch of `case`, built once: it depends only on the code that builds it, so later invocations
    (and bench/profile_train_memory.py) reuse the file."""
    import inspect

    source = "".join(inspect.getsource(f) for f in (calculator_rows, single_rows, build_batch)) + repr(CASES) + SYSTEM
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"rollbook-train-memory-{case}-{digest}.json"
    if not path.is_file():
        build_batch(case, path)
    return path


# --- the two sides, each run in a child process --------------------------------------------------------------


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def _report(kind: str, **values) -> None:
    print(f"@@{kind} " + json.dumps(values), flush=True)


def _cuda_peak(device) -> float | None:
    import torch

    return torch.cuda.max_memory_allocated() / GB if device.type == "cuda" else None


def side_rollbook(batch: dict, device) -> None:
    import torch

    from rollbook_engine.contracts.train import TrainRequest
    from rollbook_engine.model_store import ModelStore
    from rollbook_engine.trainer.trainer import train_step_sync

    store = ModelStore(runs_dir=Path(tempfile.mkdtemp(prefix="rollbook-mem-")), device=device)
    groups = [{"samples": [{"trajectory_id": f"{g}-{i}", "reward": r["reward"], "sequences": [
        {"tokens": r["tokens"], "mask": r["mask"], "logprobs": r["logprobs"]}]} for i, r in enumerate(rows)]}
        for g, rows in enumerate(batch["groups"])]
    req = TrainRequest.model_validate({"run_id": "mem", "step": 1, "base_model": store.base_model_name, "seed": 0,
                                       "config": {**CONFIG, "micro_batch_size": batch["micro_batch"]}, "groups": groups})
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    _report("ready", rss=_rss(), cuda=_cuda_peak(device))
    res = train_step_sync(store, req)
    _report("done", rss=_rss(), cuda=_cuda_peak(device), loss=res.metrics.loss, probs_corr=res.metrics.probs_corr,
            trained_tokens=res.metrics.trained_tokens)


def side_trl(batch: dict, device, gradient_checkpointing: bool) -> None:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from rollbook_engine import model_loader

    model, tokenizer = model_loader.load(model_loader.DEFAULT_MODEL, device, torch.bfloat16 if device.type == "cuda" else torch.float32)
    groups, size = batch["groups"], batch["group_size"]
    names = [f"group-{g}" for g in range(len(groups))]

    def rollout_func(prompts, trainer):
        # Prompts arrive repeated once per generation; each takes the next fixed rollout of its group.
        seen: dict[int, int] = {}
        out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [], "fixed_reward": []}
        repeated = len(prompts) == len(set(prompts)) * size
        for p in prompts:
            g = names.index(p)
            for _ in range(1 if repeated else size):
                i = seen.get(g, 0)
                seen[g] = i + 1
                r = groups[g][i % size]
                n = r["prompt_len"]
                out["prompt_ids"].append(r["tokens"][:n])
                out["completion_ids"].append(r["tokens"][n:])
                out["logprobs"].append(r["logprobs"][n:])
                out["env_mask"].append(r["mask"][n:])
                out["fixed_reward"].append(r["reward"])
        return out

    def reward_fn(completions, fixed_reward, **kwargs):
        return list(fixed_reward)

    class Ready(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
            _report("ready", rss=_rss(), cuda=_cuda_peak(device))

    rows = len(groups) * size
    args = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="trl-mem-"), max_steps=1, per_device_train_batch_size=batch["micro_batch"],
        gradient_accumulation_steps=rows // batch["micro_batch"], num_generations=size,
        max_completion_length=max(len(r["tokens"]) - r["prompt_len"] for g in groups for r in g),
        learning_rate=CONFIG["learning_rate"], beta=0.0, loss_type="grpo", epsilon=0.2, epsilon_high=0.28,
        scale_rewards="group", num_iterations=1, shuffle_dataset=False, logging_steps=1, report_to="none",
        save_strategy="no", disable_tqdm=True, log_level="warning", gradient_checkpointing=gradient_checkpointing,
        use_cpu=device.type == "cpu", bf16=device.type == "cuda", seed=0, dataloader_num_workers=0,
    )
    trainer = GRPOTrainer(
        model=model, reward_funcs=[reward_fn], args=args, train_dataset=Dataset.from_dict({"prompt": names * size * 4}),
        processing_class=tokenizer, rollout_func=rollout_func, callbacks=[Ready()],
        peft_config=LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=TARGETS, task_type="CAUSAL_LM"),
    )
    out = trainer.train()
    _report("done", rss=_rss(), cuda=_cuda_peak(device), loss=out.training_loss)


def child_main(side: str, batch_path: str, device_name: str) -> None:
    import torch

    batch = json.loads(Path(batch_path).read_text())
    device = torch.device(device_name)
    if side == "rollbook":
        side_rollbook(batch, device)
    else:
        side_trl(batch, device, gradient_checkpointing=side == "trl")


# --- the parent: run, sample, tabulate ----------------------------------------------------------------------


def measure(side: str, batch_path: Path, device: str) -> dict:
    """One child run of `side`: its reports plus the peak RSS sampled every 20 ms."""
    import psutil

    cmd = [sys.executable, __file__, "--child", side, "--batch", str(batch_path), "--device", device]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    ps = psutil.Process(proc.pid)
    peak = 0
    stop = threading.Event()

    def sample():
        nonlocal peak
        while not stop.is_set():
            try:
                peak = max(peak, ps.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    reports: dict[str, dict] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("@@"):
            kind, _, payload = line[2:].partition(" ")
            reports[kind] = json.loads(payload)
            if kind == "ready":
                ready_at = time.perf_counter()
    rc = proc.wait()
    stop.set()
    sampler.join()
    if rc != 0 or "done" not in reports:
        raise RuntimeError(f"{side} child failed (exit {rc})")
    ready, done = reports["ready"], reports["done"]
    return dict(ready=ready["rss"] / GB, peak=peak / GB, after=done["rss"] / GB, step_s=time.perf_counter() - ready_at,
                cuda=done.get("cuda"), loss=done.get("loss"), probs_corr=done.get("probs_corr"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--case", default="calculator,single", help="comma list of: " + ", ".join(CASES))
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--sides", default="rollbook,trl", help="comma list of: rollbook, trl, trl-nogc")
    ap.add_argument("--json", type=Path, help="also write every run's figures here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--batch", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(args.child, args.batch, args.device)
        return
    import torch

    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    sides = args.sides.split(",")
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    print(f"device={device} torch_threads={torch.get_num_threads()} load {' '.join(load_before)}", flush=True)
    results: dict[str, dict[str, list[dict]]] = {}
    for case in args.case.split(","):
        path = batch_file(case)
        batch = json.loads(path.read_text())
        rows = [r for g in batch["groups"] for r in g]
        print(f"{case}: {len(batch['groups'])} groups x {batch['group_size']}, micro-batch {batch['micro_batch']}, "
              f"prompt tokens ~{statistics.mean(r['prompt_len'] for r in rows):.0f}, sequence tokens "
              f"~{statistics.mean(len(r['tokens']) for r in rows):.0f}, trained tokens per rollout "
              f"~{statistics.mean(sum(r['mask']) for r in rows):.1f}", flush=True)
        for run in range(args.runs):
            for side in sides:  # interleaved, so drift in the machine's load hits both sides alike
                r = measure(side, path, device)
                results.setdefault(case, {}).setdefault(side, []).append(r)
                cuda = f" cuda_max_alloc {r['cuda']:.2f} GB" if r["cuda"] is not None else ""
                print(f"  run {run + 1} {side:<9} ready {r['ready']:.2f} GB  peak {r['peak']:.2f} GB  "
                      f"peak-ready {r['peak'] - r['ready']:.2f} GB  after {r['after']:.2f} GB{cuda}  "
                      f"step {r['step_s']:.1f}s  loss {r['loss']:.4f}"
                      + (f"  probs_corr {r['probs_corr']:.5f}" if r["probs_corr"] is not None else ""), flush=True)
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    med = statistics.median
    print(f"\nmedians of {args.runs} runs, device {device}, load before {' '.join(load_before)} after {' '.join(load_after)}")
    head = f"{'case':<11} {'side':<9} {'ready GB':>9} {'peak GB':>8} {'peak-ready':>11} {'after GB':>9} {'step s':>7}"
    print(head + (f" {'cuda max GB':>12}" if device == "cuda" else ""))
    for case, by_side in results.items():
        for side, rs in by_side.items():
            line = (f"{case:<11} {side:<9} {med(r['ready'] for r in rs):>9.2f} {med(r['peak'] for r in rs):>8.2f} "
                    f"{med(r['peak'] - r['ready'] for r in rs):>11.2f} {med(r['after'] for r in rs):>9.2f} "
                    f"{med(r['step_s'] for r in rs):>7.1f}")
            if device == "cuda":
                line += f" {med(r['cuda'] for r in rs):>12.2f}"
            print(line)
    if args.json:
        args.json.write_text(json.dumps({"device": device, "load": [load_before, load_after], "results": results}, indent=1))


if __name__ == "__main__":
    main()
