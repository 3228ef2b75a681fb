/**
 * Run configuration: the `config.json` tab of an experiment. Written once here and imported by the
 * editor (validation), the web server (freezing a run) and the runner (executing it). Every field has a
 * default and a reason, in the spirit of TRL's GRPOConfig. The Python trainer mirrors `TrainerConfig` in
 * gpu-runner/engine/rollbook_engine/contracts/train.py; the engine's tests/test_train_contract.py compares the two
 * JSON Schemas (bounds and defaults included), and both parse fixtures/train_request.json.
 */
import { z } from "zod";
import { McpConfig, SecretName } from "./mcp";
import { parseCheckpointModel } from "./model-ref";

export const DEFAULT_MODEL = "SmolLM2-135M-Instruct";

export const SamplingConfig = z
  .object({
    /** 1.0 keeps the policy's own distribution, which GRPO's importance ratios assume. */
    temperature: z.number().min(0).max(2).default(1.0),
    top_p: z.number().gt(0).max(1).default(1.0),
    /** Short completions keep CPU steps fast; raise for real tasks. */
    max_tokens: z.number().int().min(1).max(8192).default(48),
  })
  .strict();

export const TrainerConfig = z
  .object({
    // --- optimiser (ART's defaults, except lr which is raised so a 135M model moves on CPU in a few steps)
    learning_rate: z.number().gt(0).max(1).default(2e-4),
    adam_beta1: z.number().min(0).lt(1).default(0.9),
    adam_beta2: z.number().min(0).lt(1).default(0.99),
    weight_decay: z.number().min(0).default(0.1),
    /** Clip the global grad norm; ART uses 0.1 for stability with small batches. */
    max_grad_norm: z.number().gt(0).default(1.0),
    // --- LoRA
    lora_rank: z.number().int().min(1).max(256).default(8),
    lora_alpha: z.number().gt(0).default(16),
    lora_dropout: z.number().min(0).lt(1).default(0),
    /** All attention and MLP projections, as ART does. */
    lora_target_modules: z
      .array(z.string().min(1))
      .min(1)
      .default(["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
    // --- GRPO loss
    /** "cispo": -clip(ratio.detach(), 1-eps, 1+eps_high)·A·logπ (ART's default); "ppo": clipped surrogate. */
    loss: z.enum(["cispo", "ppo"]).default("ppo"),
    epsilon: z.number().min(0).default(0.2),
    epsilon_high: z.number().min(0).default(0.28),
    /** "sequence" is GSPO: one length-normalised ratio per sequence. */
    importance_sampling_level: z.enum(["token", "sequence"]).default("token"),
    /** Divide advantages by the group std (GRPO). false = Dr.GRPO. */
    scale_rewards: z.boolean().default(true),
    /** KL weight against the base model (adapter disabled); 0 skips the extra forward pass. */
    beta: z.number().min(0).default(0),
    /** Optimiser passes over the step's batch. 1 = on-policy. */
    mini_epochs: z.number().int().min(1).max(16).default(1),
    /** Sequences per forward/backward pass; gradients accumulate across micro-batches. */
    micro_batch_size: z.number().int().min(1).max(256).default(8),
  })
  .strict();

export const LimitsConfig = z
  .object({
    /**
     * Wall-clock limit of one rollout (scenario + reward): its own time, code and model work. Time a call
     * waits for a slot on the shared engine (the runner's fair queue) does not count; an absolute backstop of
     * 3× this limit of real time still ends a rollout that never gets served.
     */
    rollout_timeout_ms: z.number().int().min(100).max(3_600_000).default(60_000),
    /** Time user code runs in the isolate (isolated-vm's CPU time), per call: module load, scenario, reward. */
    cpu_timeout_ms: z.number().int().min(10).max(600_000).default(5_000),
    /** Heap limit of each rollout's isolate. */
    memory_mb: z.number().int().min(8).max(4096).default(64),
    /** Model, judge and MCP calls one rollout may have in flight; more wait in a short queue. */
    max_inflight_calls: z.number().int().min(1).max(64).default(4),
    max_run_inflight_calls: z
      .number()
      .int()
      .min(1)
      .max(1024)
      .default(16)
      .describe(
        "Model calls the whole run may have on the engine at once, across its rollouts. The runner's fair queue hands engine slots " +
          "round-robin across runs, then across a run's rollouts; a call past this cap waits for one of the run's own calls to finish.",
      ),
    /** Characters of one model call's messages and options as JSON: a multi-megabyte prompt is refused before it costs anything. */
    max_prompt_chars: z.number().int().min(1_000).max(8_000_000).default(400_000),
    /** Characters of JSON arguments in one MCP tool call. */
    max_tool_args_chars: z.number().int().min(100).max(8_000_000).default(100_000),
    /** Characters of JSON the scenario may return as its output. */
    max_output_chars: z.number().int().min(100).max(8_000_000).default(1_000_000),
    fail_after_empty_steps: z
      .number()
      .int()
      .min(0)
      .max(1000)
      .default(2)
      .describe(
        "A train run that samples this many steps in a row with nothing to learn from — no group with two valid rollouts of different " +
          "rewards, and at least empty_step_exception_rate of its rollouts failed — stops as failed, naming the most frequent error, " +
          "before it trains on nothing and checkpoints it. Fix the cause and Resume. 0 = never.",
      ),
    empty_step_exception_rate: z
      .number()
      .min(0)
      .max(1)
      .default(0.9)
      .describe("The share of a step's rollouts that must have failed for it to count as empty (see fail_after_empty_steps)."),
  })
  .strict();

export const JudgeConfig = z
  .object({
    /** An OpenAI-compatible endpoint (e.g. https://api.openai.com/v1); null = the runner's own engine. */
    base_url: z.url({ protocol: /^https?$/, error: "an http:// or https:// URL of an OpenAI-compatible endpoint" }).nullable().default(null),
    /** The judge model; null = the run's base model (adapter off) on the runner's engine. Required with base_url. */
    model: z.string().min(1).nullable().default(null),
    api_key_secret: SecretName.nullable()
      .default(null)
      .describe("Name of a workspace secret (Team → Secrets) holding the endpoint's API key; sent only to judge.base_url, never stored with the run."),
    /**
     * Gone: it named a variable of the runner's environment, which let any experiment send the runner's own
     * secrets to an endpoint of its choosing. Kept in the schema only to refuse it with the way forward.
     */
    api_key_env: z
      .null({ error: "judge.api_key_env is not read: the runner's environment is not shared with experiments. Store the key as a workspace secret (Team → Secrets) and name it in judge.api_key_secret" })
      .optional(),
    /** Greedy by default: a judge should be consistent, not creative. */
    temperature: z.number().min(0).max(2).default(0),
    max_tokens: z.number().int().min(1).max(8192).default(512),
    timeout_ms: z.number().int().min(1_000).max(600_000).default(60_000),
    /** US dollars per million prompt tokens, for the cost counted per rollout and per run. */
    prompt_price_per_million: z.number().min(0).default(0),
    completion_price_per_million: z.number().min(0).default(0),
  })
  .strict()
  .refine((j) => j.base_url === null || j.model !== null, { message: "judge.model is required with judge.base_url", path: ["model"] })
  .refine((j) => j.base_url !== null || j.api_key_secret === null, {
    message: "judge.api_key_secret is only sent to judge.base_url; the runner's own engine needs no key",
    path: ["api_key_secret"],
  });

export const RunConfig = z
  .object({
    /** The base model: one a runner serves (its ENGINE_MODEL; the bundled default here). */
    model: z
      .string()
      .min(1)
      .max(300)
      // A checkpoint of some run is not a base model: starting from one is a fork, which checks that the run is this workspace's.
      .refine((m) => parseCheckpointModel(m) === null, { message: "a checkpoint '<run>@<step>' is not a base model: fork that run from its checkpoint instead (run page → Fork)" })
      .default(DEFAULT_MODEL),
    device: z
      .enum(["cpu", "cuda"])
      .optional()
      .describe('Only a runner whose engine computes on this device takes the run ("cuda" for a GPU box); absent = any runner.'),
    seed: z.number().int().min(0).default(42),
    /** Training steps; a dry run does one step of rollouts without training. */
    num_steps: z.number().int().min(1).max(100_000).default(12),
    groups_per_step: z.number().int().min(1).max(1024).default(4),
    rollouts_per_group: z.number().int().min(1).max(256).default(4),
    /** Rollouts in flight at once (the engine batches concurrent requests). */
    max_concurrency: z.number().int().min(1).max(1024).default(16),
    /** Evaluate on the validation split every N steps (and before the first, and after the last); 0 = never. */
    eval_every: z.number().int().min(0).default(4),
    /** Sampling temperature of the validation rollouts, one per validation task; 0 = greedy (the default). */
    eval_temperature: z.number().min(0).max(2).default(0),
    /** Longest prompt + completion the run may produce; refused if it exceeds the model's context. */
    max_context_tokens: z.number().int().min(16).max(1_000_000).default(1024),
    sampling: SamplingConfig.default(SamplingConfig.parse({})),
    trainer: TrainerConfig.default(TrainerConfig.parse({})),
    limits: LimitsConfig.default(LimitsConfig.parse({})),
    judge: JudgeConfig.default(JudgeConfig.parse({})),
    /** MCP servers the scenario reaches through ctx.mcp (none by default). */
    mcp: McpConfig.default(McpConfig.parse({})),
  })
  .strict();

export type SamplingConfig = z.infer<typeof SamplingConfig>;
export type TrainerConfig = z.infer<typeof TrainerConfig>;
export type LimitsConfig = z.infer<typeof LimitsConfig>;
export type JudgeConfig = z.infer<typeof JudgeConfig>;
export type RunConfig = z.infer<typeof RunConfig>;

export const RunKind = z.enum(["train", "dry-run", "eval"]);
export type RunKind = z.infer<typeof RunKind>;

/** Issues with the config, each naming its field path, e.g. `trainer.learning_rate: must be > 0`. */
export function formatZodIssues(error: z.ZodError, prefix = ""): string[] {
  return error.issues.map((i) => {
    const path = i.path.map(String).join(".");
    return `${prefix}${path || "(root)"}: ${i.message}`;
  });
}
