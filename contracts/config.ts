/**
 * Run configuration: the `config.json` tab of an experiment. Written once here and imported by the
 * editor (validation), the web server (freezing a run) and the runner (executing it). Every field has a
 * default and a reason, in the spirit of TRL's GRPOConfig. The Python trainer mirrors `TrainerConfig` in
 * gpu-runner/engine/rollbook_engine/contracts/train.py; the engine's tests/test_train_contract.py compares the two
 * JSON Schemas (bounds and defaults included), and both parse fixtures/train_request.json.
 *
 * Every field's `.describe()` text is what the editor shows when the user hovers the key in config.json
 * (z.toJSONSchema → Monaco), so it says what the field does, its default, its bounds where they matter and
 * the paper or TRL setting it follows; config-descriptions.test.ts fails on a field without one. The
 * `.describe()` comes last in each chain so the text sits on the field itself, not on a wrapped inner type.
 */
import { z } from "zod";
import { McpConfig, SecretName } from "./mcp";
import { classifyModelName } from "./model-ref";

export const DEFAULT_MODEL = "SmolLM2-135M-Instruct";

export const SamplingConfig = z
  .object({
    temperature: z
      .number()
      .min(0)
      .max(2)
      .default(1.0)
      .describe(
        "Sampling temperature of training rollouts, 0–2. Default 1.0: the policy's own distribution, which GRPO's importance " +
          "ratios assume (TRL's GRPOConfig default too). A ctx.chat call may pass its own.",
      ),
    top_p: z
      .number()
      .gt(0)
      .max(1)
      .default(1.0)
      .describe(
        "Nucleus sampling (Holtzman et al. 2020) for training rollouts: sample only from the most likely tokens whose probabilities " +
          "add up to top_p. Above 0, at most 1. Default 1.0: off. A ctx.chat call may pass its own.",
      ),
    max_tokens: z
      .number()
      .int()
      .min(1)
      .max(8192)
      .default(48)
      .describe(
        "Most tokens one model call may generate, 1–8192, unless the call asks for its own; always cut to the room left under " +
          "max_context_tokens. Default 48: short completions keep CPU steps fast. Raise it for real tasks.",
      ),
  })
  .strict();

export const TrainerConfig = z
  .object({
    // --- optimiser (ART's defaults, except lr: chosen by measurement for the default model, see docs/benchmarks.md)
    learning_rate: z
      .number()
      .gt(0)
      .max(1)
      .default(1e-3)
      .describe(
        "AdamW learning rate of the LoRA adapter; above 0, at most 1. Default 1e-3, measured on the bundled SmolLM2-135M: " +
          "three single-turn tasks written fresh (15 steps × 4 groups × 4 rollouts) raised their greedy validation reward by " +
          "≥ 0.15 on 5 of 6 task-seed pairs with it, where the former default 2e-4 barely moved a fresh task " +
          '(docs/benchmarks.md, "Defaults that learn"). ART uses 5e-6 and TRL\'s GRPOConfig 1e-6: lower it for larger models.',
      ),
    adam_beta1: z
      .number()
      .min(0)
      .lt(1)
      .default(0.9)
      .describe("AdamW's β1 (Kingma & Ba 2015): decay of the gradient's running mean; at least 0, below 1. Default 0.9, as in ART and TRL."),
    adam_beta2: z
      .number()
      .min(0)
      .lt(1)
      .default(0.99)
      .describe(
        "AdamW's β2: decay of the squared gradient's running mean; at least 0, below 1. Default 0.99 rather than the usual 0.999, " +
          "so the second moment keeps up with a few noisy RL steps.",
      ),
    weight_decay: z
      .number()
      .min(0)
      .default(0.1)
      .describe(
        "AdamW's decoupled weight decay (Loshchilov & Hutter 2019), on the LoRA parameters only: the base model is frozen. " +
          "At least 0. Default 0.1 (ART's).",
      ),
    max_grad_norm: z
      .number()
      .gt(0)
      .default(1.0)
      .describe(
        "Clip the adapter's global gradient norm to this before each optimiser step; above 0. Default 1.0 (TRL's). " +
          "ART uses 0.1 for stability with small batches.",
      ),
    // --- LoRA
    lora_rank: z
      .number()
      .int()
      .min(1)
      .max(256)
      .default(8)
      .describe(
        "LoRA rank r (Hu et al. 2021), 1–256: the adapter's width; higher learns more and costs more memory. Default 8 (ART's). " +
          "It must match the checkpoint a run resumes or forks from.",
      ),
    lora_alpha: z
      .number()
      .gt(0)
      .default(16)
      .describe(
        "LoRA alpha, above 0: the adapter's update is scaled by alpha / r. Default 16 (ART's): a scale of 2 at rank 8. " +
          "It must match the checkpoint a run resumes or forks from.",
      ),
    lora_dropout: z
      .number()
      .min(0)
      .lt(1)
      .default(0)
      .describe(
        "Dropout on the LoRA input while training; at least 0, below 1. Default 0: the trained logprobs then equal the sampled ones, " +
          "which the importance ratios compare.",
      ),
    lora_target_modules: z
      .array(z.string().min(1))
      .min(1)
      .default(["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
      .describe(
        "Names of the modules that get a LoRA adapter; at least one. Default: every attention and MLP projection " +
          "(q, k, v, o, gate, up, down), as ART does. It must match the checkpoint a run resumes or forks from.",
      ),
    // --- GRPO loss
    loss: z
      .enum(["cispo", "ppo"])
      .default("ppo")
      .describe(
        'The policy loss, with r the token\'s probability now over when it was sampled and A its advantage. "ppo" (default): ' +
          "PPO's clipped surrogate (Schulman et al. 2017) as GRPO uses it, −min(r·A, clip(r, 1−ε, 1+ε_high)·A). " +
          '"cispo": CISPO (MiniMax-M1, 2025), −clip(r, 1−ε, 1+ε_high).detach()·A·log π: it clips the importance weight instead of ' +
          "dropping a clipped token's gradient. ART's default.",
      ),
    epsilon: z
      .number()
      .min(0)
      .max(10)
      .default(0.2)
      .describe(
        "Lower clip range ε: ratios below 1−ε are clipped, so one step cannot move the policy far (PPO's clip, Schulman et al. 2017). " +
          "At least 0, at most 10 (ART's CISPO widens it to 1). Default 0.2, as in PPO and TRL's GRPOConfig.",
      ),
    epsilon_high: z
      .number()
      .min(0)
      .max(10)
      .default(0.28)
      .describe(
        "Upper clip range: ratios above 1+epsilon_high are clipped. At least 0, at most 10 (ART's CISPO widens it to 4). Default 0.28: DAPO's clip-higher (Yu et al. 2025), " +
          "a wider upper range that lets unlikely tokens gain probability and so keeps exploring. Equal to epsilon, it is PPO's symmetric clip.",
      ),
    importance_sampling_level: z
      .enum(["token", "sequence"])
      .default("token")
      .describe(
        '"token" (default): one importance ratio per token, as in GRPO (Shao et al. 2024). "sequence": GSPO (Zheng et al. 2025), ' +
          "one length-normalised ratio per sequence, exp(mean of its tokens' log-ratios), shared by all its tokens.",
      ),
    scale_rewards: z
      .boolean()
      .default(true)
      .describe(
        "true (default): advantage = (reward − group mean) / (group std + 1e-6), as in GRPO (Shao et al. 2024). false: only the " +
          "group mean is subtracted, as Dr. GRPO (Liu et al. 2025) recommends: dividing by the std over-weights groups whose rewards " +
          "barely differ (a question-level difficulty bias).",
      ),
    beta: z
      .number()
      .min(0)
      .max(10)
      .default(0)
      .describe(
        "Weight of a KL penalty toward the base model (the adapter switched off), estimated per token with Schulman's k3 estimator " +
          "as in GRPO (Shao et al. 2024). At least 0, at most 10 (GRPO used 0.04). Default 0: no penalty and no extra forward pass; DAPO and Dr. GRPO drop the " +
          "KL term, and TRL's GRPOConfig defaults to 0 too.",
      ),
    mini_epochs: z
      .number()
      .int()
      .min(1)
      .max(16)
      .default(1)
      .describe(
        "Optimiser passes over the step's batch, one optimiser step each (GRPO's μ, TRL's num_iterations), 1–16. Default 1: " +
          "strictly on-policy. More passes reuse the samples; the clip keeps later passes near the policy that sampled them. " +
          "They also sharpen the policy faster than it explores: on the bundled 135M model 2 passes made a fresh task's groups " +
          'identical within 8 steps (nothing left to train on) where 1 pass learnt it (docs/benchmarks.md, "Defaults that learn").',
      ),
    micro_batch_size: z
      .number()
      .int()
      .min(1)
      .max(256)
      .default(8)
      .describe(
        "Most sequences per forward/backward pass, 1–256 (micro_batch_tokens may make a micro-batch smaller). Gradients " +
          "accumulate across micro-batches into one update, so this trades memory for speed and does not change the update. Default 8.",
      ),
    micro_batch_tokens: z
      .number()
      .int()
      .min(16)
      .max(1_048_576)
      .default(4096)
      .describe(
        "Most padded tokens (sequences × the longest one's length) per forward/backward pass, 16–1 048 576: micro-batches are " +
          "sized by tokens, so long multi-turn sequences train in smaller micro-batches than short ones and memory stays flat; " +
          "a sequence longer than this trains alone. Like micro_batch_size it does not change the update. Default 4096 " +
          "(8 rollouts of the calculator template's ~400 tokens in one micro-batch).",
      ),
    gradient_checkpointing: z
      .boolean()
      .default(true)
      .describe(
        "true (default): keep only each decoder layer's input during the forward pass and recompute the layer in the backward " +
          "pass (non-reentrant activation checkpointing, as TRL's GRPOConfig defaults to): the step's activations shrink by about " +
          "the number of layers for about one more forward pass of compute. The update is the same either way.",
      ),
  })
  .strict();

export const LimitsConfig = z
  .object({
    rollout_timeout_ms: z
      .number()
      .int()
      .min(100)
      .max(3_600_000)
      .default(60_000)
      .describe(
        "Wall-clock limit of one rollout (scenario + reward): its own time, code and model work, 100 ms to 1 hour. Time a call " +
          "waits for a slot on the shared engine (the runner's fair queue) does not count; 3× this limit of real time still ends a " +
          "rollout that never gets served. Default 60 000 (60 s).",
      ),
    cpu_timeout_ms: z
      .number()
      .int()
      .min(10)
      .max(600_000)
      .default(5_000)
      .describe(
        "Time user code may run in the isolate per call (isolated-vm's CPU time): module load, scenario, reward. " +
          "10 ms to 10 minutes. Default 5 000 (5 s).",
      ),
    memory_mb: z
      .number()
      .int()
      .min(8)
      .max(4096)
      .default(64)
      .describe("Heap limit of each rollout's isolate in MB, 8–4096; past it the rollout fails with a memory error. Default 64."),
    max_inflight_calls: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(4)
      .describe(
        "Model, judge and MCP calls one rollout may have in flight, 1–64; up to 64 more wait in a queue, and past that a call " +
          "fails (limit). Default 4.",
      ),
    max_run_inflight_calls: z
      .number()
      .int()
      .min(1)
      .max(1024)
      .default(16)
      .describe(
        "Model calls the whole run may have on the engine at once, across its rollouts, 1–1024. The runner's fair queue hands engine slots " +
          "round-robin across runs, then across a run's rollouts; a call past this cap waits for one of the run's own calls to finish. Default 16.",
      ),
    max_prompt_chars: z
      .number()
      .int()
      .min(1_000)
      .max(8_000_000)
      .default(400_000)
      .describe(
        "Characters of one model call's messages and options as JSON (tools, names and ids count), 1 000 to 8 000 000: " +
          "a multi-megabyte prompt is refused before it costs anything. Default 400 000.",
      ),
    max_tool_args_chars: z
      .number()
      .int()
      .min(100)
      .max(8_000_000)
      .default(100_000)
      .describe("Characters of JSON arguments in one MCP tool call, 100 to 8 000 000. Default 100 000."),
    max_output_chars: z
      .number()
      .int()
      .min(100)
      .max(8_000_000)
      .default(1_000_000)
      .describe("Characters of JSON the scenario may return as its output, 100 to 8 000 000. Default 1 000 000."),
    fail_after_empty_steps: z
      .number()
      .int()
      .min(0)
      .max(1000)
      .default(2)
      .describe(
        "A train run that samples this many steps in a row with nothing to learn from — no group with two valid rollouts of different " +
          "rewards, and at least empty_step_exception_rate of its rollouts failed — stops as failed, naming the most frequent error, " +
          "before it trains on nothing and checkpoints it. Fix the cause and Resume. 0–1000; 0 = never. Default 2.",
      ),
    empty_step_exception_rate: z
      .number()
      .min(0)
      .max(1)
      .default(0.9)
      .describe("The share of a step's rollouts, 0–1, that must have failed for it to count as empty (see fail_after_empty_steps). Default 0.9."),
  })
  .strict();

/**
 * Which checkpoints a train run keeps on its runner's disk (features/checkpoints/server/checkpoint-retention.ts
 * applies it on the web server after each stored checkpoint and eval, deleting through the same
 * deleteCheckpoints an ART client's delete_checkpoints calls). The newest checkpoint is never deleted: the
 * next step samples from it and a resume trains on from it.
 */
export const CheckpointsConfig = z
  .object({
    keep_last: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .nullable()
      .default(null)
      .describe(
        "Keep only the newest N checkpoints, 1–100 000 (plus the best one with keep_best); the others are deleted from the runner's " +
          "disk and the checkpoint list after each checkpoint and eval. null = keep every checkpoint (about 28 MB each for the default " +
          "model). Default null.",
      ),
    keep_best: z
      .boolean()
      .default(true)
      .describe(
        "With keep_last: also keep the checkpoint with the best validation reward, the one <run>@best serves (ties: the earliest). " +
          "Default true.",
      ),
  })
  .strict();

export const JudgeConfig = z
  .object({
    base_url: z
      .url({ protocol: /^https?$/, error: "an http:// or https:// URL of an OpenAI-compatible endpoint" })
      .nullable()
      .default(null)
      .describe(
        "An OpenAI-compatible endpoint for judges, e.g. https://api.openai.com/v1 (http or https; the runner refuses private and " +
          "loopback addresses unless its operator allows them). Default null: the runner's own engine.",
      ),
    model: z
      .string()
      .min(1)
      .nullable()
      .default(null)
      .describe(
        'The judge model: a model of base_url, or on the runner\'s engine a checkpoint "<run>@<step>" of this workspace\'s runs. ' +
          "Required with base_url. Default null: the run's base model on the runner's engine, with no adapter (never trained).",
      ),
    api_key_secret: SecretName.nullable()
      .default(null)
      .describe(
        "Name of a workspace secret (Team → Secrets) holding the endpoint's API key; sent only to judge.base_url, never stored with the run. " +
          "Default null: no key (the runner's own engine needs none).",
      ),
    // Gone: it named a variable of the runner's environment, which let any experiment send the runner's own
    // secrets to an endpoint of its choosing. Kept in the schema only to refuse it with the way forward.
    api_key_env: z
      .null({ error: "judge.api_key_env is not read: the runner's environment is not shared with experiments. Store the key as a workspace secret (Team → Secrets) and name it in judge.api_key_secret" })
      .optional()
      .describe(
        "Not read any more: the runner's environment is not shared with experiments. Store the key as a workspace secret " +
          "(Team → Secrets) and name it in api_key_secret.",
      ),
    temperature: z
      .number()
      .min(0)
      .max(2)
      .default(0)
      .describe("Sampling temperature of judge calls, 0–2, unless a call asks for its own. Default 0 (greedy): a judge should be consistent, not creative."),
    max_tokens: z
      .number()
      .int()
      .min(1)
      .max(8192)
      .default(512)
      .describe("Most tokens a judge's answer may have, 1–8192, unless a call asks for its own. Default 512."),
    timeout_ms: z
      .number()
      .int()
      .min(1_000)
      .max(600_000)
      .default(60_000)
      .describe("Time limit of one judge call, 1 s to 10 minutes. Default 60 000 (60 s)."),
    prompt_price_per_million: z
      .number()
      .min(0)
      .default(0)
      .describe(
        "US dollars per million prompt tokens sent to the judge, for the judge cost counted per rollout and per run (judge_cost_usd). " +
          "At least 0. Default 0.",
      ),
    completion_price_per_million: z
      .number()
      .min(0)
      .default(0)
      .describe("US dollars per million tokens the judge generates, counted like prompt_price_per_million. At least 0. Default 0."),
  })
  .strict()
  .refine((j) => j.base_url === null || j.model !== null, { message: "judge.model is required with judge.base_url", path: ["model"] })
  .refine((j) => j.base_url !== null || j.api_key_secret === null, {
    message: "judge.api_key_secret is only sent to judge.base_url; the runner's own engine needs no key",
    path: ["api_key_secret"],
  })
  // On the runner's own engine the name is a model the runner parses: a base model or `<run>@<step>` in the
  // shared grammar (identifiers.json), never a spelling one side reads as the other. An endpoint of the
  // user's choosing (base_url) names its models as it likes.
  .superRefine((j, ctx) => {
    if (j.base_url !== null || j.model === null) return;
    const name = classifyModelName(j.model);
    if (name.kind === "invalid") ctx.addIssue({ code: "custom", path: ["model"], message: `model ${JSON.stringify(j.model)} ${name.reason}` });
  });

export const RunConfig = z
  .object({
    model: z
      .string()
      .min(1)
      .max(300)
      // A checkpoint of some run is not a base model: starting from one is a fork, which checks that the run is this workspace's.
      .refine((m) => classifyModelName(m).kind !== "checkpoint", { message: "a checkpoint '<run>@<step>' is not a base model: fork that run from its checkpoint instead (run page → Fork)" })
      // Nor is a name of neither form (the shared grammar, contracts/identifiers.json: `<run>@２`, a newline…).
      .superRefine((m, ctx) => {
        const name = classifyModelName(m);
        if (name.kind === "invalid") ctx.addIssue({ code: "custom", message: `model ${JSON.stringify(m)} ${name.reason}` });
      })
      .default(DEFAULT_MODEL)
      .describe(
        `The base model the run trains a LoRA adapter on: one a runner serves (its ENGINE_MODEL); the run waits for a runner that ` +
          `serves it. Default "${DEFAULT_MODEL}", the bundled model. A checkpoint "<run>@<step>" is not a base model: fork that run instead.`,
      ),
    device: z
      .enum(["cpu", "cuda"])
      .optional()
      .describe('Only a runner whose engine computes on this device takes the run ("cuda" for a GPU box); absent (the default) = any runner.'),
    seed: z
      .number()
      .int()
      .min(0)
      .default(42)
      .describe(
        "Seeds the order tasks are drawn in, every model call's sampling and the trainer's random numbers, so a resumed run " +
          "continues exactly as an uninterrupted one would. An integer, at least 0. Default 42.",
      ),
    num_steps: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(12)
      .describe(
        "Training steps, 1–100 000. Each step samples groups_per_step × rollouts_per_group rollouts, trains one GRPO step on them " +
          "and saves a checkpoint. A dry run does one step of rollouts without training. Default 12.",
      ),
    groups_per_step: z
      .number()
      .int()
      .min(1)
      .max(1024)
      .default(4)
      .describe(
        "Tasks per training step, one group of rollouts each, 1–1024. Tasks come from the train split in seeded, shuffled epochs: " +
          "each is used once before any repeats. Default 4.",
      ),
    rollouts_per_group: z
      .number()
      .int()
      .min(1)
      .max(256)
      .default(4)
      .describe(
        "Rollouts of the same task in a group: GRPO's group size G (Shao et al. 2024), TRL's num_generations. 1–256; a train run " +
          "needs at least 2, since each rollout's advantage is its reward against its group's. Default 4.",
      ),
    max_concurrency: z
      .number()
      .int()
      .min(1)
      .max(1024)
      .default(16)
      .describe("Rollouts in flight at once, 1–1024; the engine batches their concurrent model calls. Default 16."),
    eval_every: z
      .number()
      .int()
      .min(0)
      .default(4)
      .describe(
        'Evaluate on the validation split (tasks marked "split": "val") every N steps, and before the first step and after the ' +
          "last: one rollout per validation task. 0 = never. Default 4.",
      ),
    eval_temperature: z
      .number()
      .min(0)
      .max(2)
      .default(0)
      .describe(
        "Sampling temperature of the validation rollouts, 0–2; a scenario's own temperature, top_p and seed are ignored there. " +
          "Default 0 (greedy), so scores compare across steps.",
      ),
    max_context_tokens: z
      .number()
      .int()
      .min(16)
      .max(1_000_000)
      .default(1024)
      .describe(
        "Most tokens a model call's prompt and completion may add up to, 16 to 1 000 000: a call's max_tokens is cut to the room " +
          "left, and a prompt past it fails the rollout. A run asking for more than the model's context is refused. Default 1024.",
      ),
    sampling: SamplingConfig.default(SamplingConfig.parse({})).describe(
      "How training rollouts sample from the model (validation uses eval_temperature). Each field has its own default.",
    ),
    trainer: TrainerConfig.default(TrainerConfig.parse({})).describe(
      "The GRPO step's hyper-parameters: optimiser, LoRA adapter and loss, after TRL's GRPOConfig and ART. Each field has its own default.",
    ),
    limits: LimitsConfig.default(LimitsConfig.parse({})).describe(
      "Limits of each rollout's sandbox and of the run's calls (docs/sandbox.md). Each field has its own default.",
    ),
    judge: JudgeConfig.default(JudgeConfig.parse({})).describe(
      "The model judges (llmJudge, rulerJudge, judgeChat) call. By default the run's base model on the runner's own engine; " +
        "each field has its own default.",
    ),
    checkpoints: CheckpointsConfig.default(CheckpointsConfig.parse({})).describe(
      "Which checkpoints a train run keeps on disk: all (the default), or the newest keep_last plus the best-validated one.",
    ),
    mcp: McpConfig.default(McpConfig.parse({})).describe(
      "MCP servers the scenario reaches through ctx.mcp, and their time and size limits. Default: no servers.",
    ),
  })
  .strict();


export type SamplingConfig = z.infer<typeof SamplingConfig>;
export type TrainerConfig = z.infer<typeof TrainerConfig>;
export type LimitsConfig = z.infer<typeof LimitsConfig>;
export type JudgeConfig = z.infer<typeof JudgeConfig>;
export type CheckpointsConfig = z.infer<typeof CheckpointsConfig>;
export type RunConfig = z.infer<typeof RunConfig>;

/**
 * `art`: an OpenPipe ART client's model (features/art). Its client logs its steps over /api/art/v1; no
 * runner runs it, so runs.start refuses it (only the ART API creates one).
 * `tinker`: a Tinker SDK client's model (features/tinker, /api/tinker): its client's own loop calls
 * forward_backward / optim_step / sample; like `art`, created by its door only, never started or forked here.
 */
export const RunKind = z.enum(["train", "dry-run", "eval", "art", "tinker"]);
export type RunKind = z.infer<typeof RunKind>;

/** Kinds driven by an outside client (its code lives with the client): no runner loop, no fork, no re-run. */
export const CLIENT_DRIVEN_KINDS = ["art", "tinker"] as const;
export const isClientDriven = (kind: string | null | undefined): boolean => (CLIENT_DRIVEN_KINDS as readonly string[]).includes(kind ?? "");

/**
 * Zod's issues as "field: message", each naming its field path, e.g. `trainer.learning_rate: must be > 0`: the
 * one formatter every door uses for zod's refusals (a ZodError's own message is its issues as a JSON array).
 * `root` names an issue about the whole value; zod's "Invalid input: " is dropped where the field says where.
 */
export function formatZodIssues(error: z.ZodError, prefix = "", root = "(root)"): string[] {
  return error.issues.map((i) => {
    const path = i.path.map(String).join(".");
    const field = `${prefix}${path || root}`;
    // Some schemas' messages name their field already ("tags: at most 20 tags"): said once.
    if (i.message.startsWith(`${path || root}: `)) return `${prefix}${i.message}`;
    return `${field}: ${path ? i.message.replace(/^Invalid input: /, "") : i.message}`;
  });
}
