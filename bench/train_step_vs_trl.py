"""One GRPO step, Rollbook's trainer vs TRL's GRPOTrainer, on the same model and the same fixed batch.

    gpu-runner/engine/.venv/bin/pip install -r bench/requirements-bench.txt   # TRL, for this bench only
    gpu-runner/engine/.venv/bin/python bench/train_step_vs_trl.py [--steps 3] [--max-tokens 32]

Both sides: SmolLM2-135M-Instruct (fp32 on CPU, bf16 weights on CUDA), LoRA r=8 alpha=16 on all attention
and MLP projections, 4 groups x 4 completions, AdamW lr 2e-4 betas (0.9, 0.99) wd 0.1, grad clip 1.0,
PPO-clipped loss ε=0.2 / ε_high=0.28, std-scaled group advantages, no KL, one optimiser step per batch in
two micro-batches of 8 (TRL: per_device_train_batch_size=8, gradient_accumulation_steps=2).

The batch is sampled once by the engine's own transformers backend and then fed to both trainers:
- Rollbook: a TrainRequest built from those token ids, sampling logprobs and rewards.
- TRL: `rollout_func` (TRL's documented hook for external generation) returns the same prompt ids,
  completion ids and logprobs instead of generating, and a reward function returns the same rewards
  (passed through rollout_func's extra fields). So TRL's generation costs nothing and both train on
  identical tokens with identical advantages.
Each side runs one warm-up step (not timed) and then --steps timed steps on that same batch. Rollbook's
step time includes writing its checkpoint (adapter + optimizer state, fsynced) because every /train step
does that; TRL runs with save_strategy="no". The save time is also printed on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "gpu-runner" / "engine"
sys.path.insert(0, str(ENGINE))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

import torch  # noqa: E402

from rollbook_engine.backends.base import GenerationRequest  # noqa: E402
from rollbook_engine.backends.transformers_backend import TransformersBackend  # noqa: E402
from rollbook_engine.contracts.train import TrainRequest  # noqa: E402
from rollbook_engine.model_store import ModelStore  # noqa: E402
from rollbook_engine.trainer import checkpoints as ck  # noqa: E402
from rollbook_engine.trainer.trainer import train_step_sync  # noqa: E402

PROMPTS = ["Say hi to a friend.", "Name three colours.", "What is 12 + 30?", "Write a haiku about rain."]
GROUP_SIZE = 4
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
CONFIG = dict(learning_rate=2e-4, adam_beta1=0.9, adam_beta2=0.99, weight_decay=0.1, max_grad_norm=1.0,
              lora_rank=8, lora_alpha=16, lora_dropout=0.0, lora_target_modules=TARGETS, loss="ppo",
              epsilon=0.2, epsilon_high=0.28, importance_sampling_level="token", scale_rewards=True, beta=0.0,
              mini_epochs=1, micro_batch_size=8)


def sample_batch(store: ModelStore, max_tokens: int):
    """(prompt ids, completions [(ids, logprobs)], rewards) per prompt, from the engine's sampler."""
    backend = TransformersBackend(store)
    prompt_ids = []
    for p in PROMPTS:
        ids = store.tokenizer.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True,
                                                  tokenize=True, return_dict=False)
        prompt_ids.append(list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "input_ids") else ids))
    reqs = [GenerationRequest(model=store.base_model_name, prompt_token_ids=p, max_tokens=max_tokens,
                              temperature=1.0, n=GROUP_SIZE, seed=1234 + i) for i, p in enumerate(prompt_ids)]

    async def run():
        try:
            return await backend.generate(reqs)
        finally:
            await backend.close()

    outs = asyncio.run(run())
    completions = [[(o.token_ids, o.logprobs) for o in group] for group in outs]
    # Fixed rewards with variance in every group, so all four groups train on both sides.
    rewards = [[float(i % 2) + 0.25 * g for i in range(GROUP_SIZE)] for g in range(len(PROMPTS))]
    return prompt_ids, completions, rewards


def rollbook_request(step: int, prompt_ids, completions, rewards, run_id: str = "bench") -> TrainRequest:
    groups = []
    for p, comps, rs in zip(prompt_ids, completions, rewards):
        samples = [{"trajectory_id": f"{len(groups)}-{i}", "reward": r, "sequences": [{
            "tokens": p + ids, "mask": [0] * len(p) + [1] * len(ids), "logprobs": [0.0] * len(p) + lps}]}
            for i, ((ids, lps), r) in enumerate(zip(comps, rs))]
        groups.append({"samples": samples})
    return TrainRequest.model_validate({"run_id": run_id, "step": step, "base_model": "SmolLM2-135M-Instruct",
                                        "seed": 0, "config": CONFIG, "groups": groups})


def bench_rollbook(store, batch, steps):
    """Wall and CPU seconds per step; the checkpoint write is timed by wrapping ck.write_checkpoint."""
    walls, cpus, saves = [], [], []
    real_write = ck.write_checkpoint

    def timed_write(*a, **kw):
        t = time.perf_counter()
        try:
            return real_write(*a, **kw)
        finally:
            saves.append(time.perf_counter() - t)

    ck.write_checkpoint = timed_write
    try:
        for step in range(1, steps + 2):
            req = rollbook_request(step, *batch)
            w0, c0 = time.perf_counter(), time.process_time()
            res = train_step_sync(store, req)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            if step > 1:
                walls.append(wall)
                cpus.append(cpu)
            print(f"  rollbook step {step}: wall {wall:.2f}s cpu {cpu:.2f}s save {saves[-1]:.2f}s "
                  f"loss={res.metrics.loss:.4f} grad_norm={res.metrics.grad_norm:.3f} "
                  f"probs_corr={res.metrics.probs_corr:.5f} tokens={res.metrics.trained_tokens}"
                  + (" (warm-up)" if step == 1 else ""), flush=True)
    finally:
        ck.write_checkpoint = real_write
    return walls, cpus, saves[1:]


def bench_trl(store, batch, steps, device):
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from rollbook_engine import model_loader

    prompt_ids, completions, rewards = batch
    model, tokenizer = model_loader.load(store.base_model_name, device, store.dtype)
    by_prompt = {p: i for i, p in enumerate(PROMPTS)}

    def rollout_func(prompts, trainer):
        # TRL hands over this process's prompts; return GROUP_SIZE fixed completions per distinct prompt in
        # order (repeated prompts take the next completion of their group).
        seen: dict[int, int] = {}
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "fixed_reward": []}
        repeated = len(prompts) == len(set(prompts)) * GROUP_SIZE
        for p in prompts:
            g = by_prompt[p]
            for _ in range(1 if repeated else GROUP_SIZE):
                i = seen.get(g, 0)
                seen[g] = i + 1
                ids, lps = completions[g][i % GROUP_SIZE]
                out["prompt_ids"].append(prompt_ids[g])
                out["completion_ids"].append(list(ids))
                out["logprobs"].append(list(lps))
                out["fixed_reward"].append(rewards[g][i % GROUP_SIZE])
        return out

    def reward_fn(completions, fixed_reward, **kwargs):
        return list(fixed_reward)

    walls: list[float] = []
    cpus: list[float] = []

    class StepTimer(TrainerCallback):
        # on_step_begin fires before the step's first micro-batch is prepared, so the (mocked) generation,
        # reward and advantage work is inside the timed span, as it is inside Rollbook's /train step.
        def on_step_begin(self, args, state, control, **kw):
            self.w0, self.c0 = time.perf_counter(), time.process_time()

        def on_step_end(self, args, state, control, **kw):
            walls.append(time.perf_counter() - self.w0)
            cpus.append(time.process_time() - self.c0)
            print(f"  trl      step {state.global_step}: wall {walls[-1]:.2f}s cpu {cpus[-1]:.2f}s"
                  + (" (warm-up)" if len(walls) == 1 else ""), flush=True)

    args = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="trl-bench-"), max_steps=steps + 1, per_device_train_batch_size=8,
        gradient_accumulation_steps=2, num_generations=GROUP_SIZE, max_completion_length=max(len(c[0]) for g in completions for c in g),
        learning_rate=2e-4, adam_beta1=0.9, adam_beta2=0.99, weight_decay=0.1, max_grad_norm=1.0,
        lr_scheduler_type="constant", warmup_steps=0, beta=0.0, loss_type="grpo", epsilon=0.2, epsilon_high=0.28,
        scale_rewards="group", num_iterations=1, shuffle_dataset=False, logging_steps=1, report_to="none",
        save_strategy="no", disable_tqdm=True, log_level="warning",
        # TRL's GRPOConfig defaults gradient_checkpointing to True; Rollbook does not checkpoint activations,
        # so it is off here to compare the same work (with it on, TRL recomputes every forward).
        gradient_checkpointing=False, use_cpu=device.type == "cpu", bf16=device.type == "cuda",
        seed=0, dataloader_num_workers=0,
    )
    trainer = GRPOTrainer(
        model=model, reward_funcs=[reward_fn], args=args, train_dataset=Dataset.from_dict({"prompt": PROMPTS * 8}),
        processing_class=tokenizer, rollout_func=rollout_func, callbacks=[StepTimer()],
        peft_config=LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=TARGETS, task_type="CAUSAL_LM"),
    )
    trainer.train()
    return walls[1:], cpus[1:]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3, help="timed steps per trainer (after one warm-up step)")
    ap.add_argument("--max-tokens", type=int, default=32)
    args = ap.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"device={device} torch_threads={torch.get_num_threads()}", flush=True)
    store = ModelStore(runs_dir=Path(tempfile.mkdtemp(prefix="rollbook-bench-")), device=device)
    batch = sample_batch(store, args.max_tokens)
    lengths = [len(c[0]) for g in batch[1] for c in g]
    print(f"batch: {len(PROMPTS)} groups x {GROUP_SIZE}, completion tokens mean {statistics.mean(lengths):.1f} "
          f"(min {min(lengths)}, max {max(lengths)}), prompt tokens {[len(p) for p in batch[0]]}", flush=True)

    ours_wall, ours_cpu, saves = bench_rollbook(store, batch, args.steps)
    trl_wall, trl_cpu = bench_trl(store, batch, args.steps, device)
    import trl as trl_pkg

    med = statistics.median
    print(f"\nmedian per step over {args.steps} timed steps ({device}, {torch.get_num_threads()} torch threads):")
    print(f"  rollbook        wall {med(ours_wall):.2f}s  cpu {med(ours_cpu):.2f}s  "
          f"(checkpoint write {med(saves):.2f}s wall, included)")
    print(f"  trl {trl_pkg.__version__:<10} wall {med(trl_wall):.2f}s  cpu {med(trl_cpu):.2f}s")
    print(f"  ratio rollbook/trl: wall {med(ours_wall) / med(trl_wall):.2f}  cpu {med(ours_cpu) / med(trl_cpu):.2f}")
    print("  (cpu = process CPU seconds, all threads: less sensitive than wall time to other load on the machine)")


if __name__ == "__main__":
    main()
