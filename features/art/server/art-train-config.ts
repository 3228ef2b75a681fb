/**
 * ART's experimental_config → the trainer's config (contracts TrainerConfig), over the run's own (its
 * experiment's config.json `trainer`: LoRA rank, micro-batch, mini_epochs… which ART does not send). Pure.
 *
 *   learning_rate               → learning_rate (ART's default 5e-6 arrives as set: the script's choice)
 *   ppo true / false            → loss "ppo" / "cispo" (ART without ppo clips the importance weight, CISPO-style)
 *   epsilon, epsilon_high       → epsilon, epsilon_high (null: the run's; ART without ppo widens both, but
 *                                 only when the script sets them does Rollbook change its clip)
 *   importance_sampling_level   → "token" or "sequence" (GSPO); "average", "geometric_average" are refused
 *   scale_rewards               → scale_rewards
 *   precalculate_logprobs true  → every sequence trains on the policy's own logprobs (not the sampler's)
 *
 * Refused by name when set to anything but their no-op value: advantage_balance ≠ 0, mask_prob_ratio,
 * kimi_k2_tau, max_negative_advantage_importance_sampling_weight, and any key this Rollbook does not know.
 */
import { TrainerConfig } from "@contracts";
import type { ArtExperimentalConfig } from "../schema";

const KNOWN = new Set([
  "advantage_balance",
  "epsilon",
  "epsilon_high",
  "importance_sampling_level",
  "kimi_k2_tau",
  "learning_rate",
  "mask_prob_ratio",
  "max_negative_advantage_importance_sampling_weight",
  "ppo",
  "precalculate_logprobs",
  "scale_rewards",
]);

export type MappedConfig =
  | { ok: true; trainer: TrainerConfig; recomputeLogprobs: boolean; applied: Record<string, unknown> }
  | { ok: false; message: string; param: string };

const refuse = (field: string, why: string): MappedConfig => ({ ok: false, message: `experimental_config.${field}: ${why}`, param: `experimental_config.${field}` });

export function mapArtConfig(base: TrainerConfig, art: ArtExperimentalConfig | null | undefined): MappedConfig {
  const c = art ?? {};
  for (const [key, value] of Object.entries(c)) {
    if (!KNOWN.has(key) && value !== null && value !== undefined) return refuse(key, "not a setting this Rollbook knows; leave it unset");
  }
  if (c.advantage_balance != null && c.advantage_balance !== 0) return refuse("advantage_balance", "not supported by Rollbook's trainer (positive and negative advantages are weighed equally); leave it 0");
  if (c.mask_prob_ratio) return refuse("mask_prob_ratio", "not supported by Rollbook's trainer; leave it false");
  if (c.kimi_k2_tau != null) return refuse("kimi_k2_tau", "the Kimi K2 loss is not supported by Rollbook's trainer (ppo or cispo); leave it unset");
  if (c.max_negative_advantage_importance_sampling_weight != null) {
    return refuse("max_negative_advantage_importance_sampling_weight", "not supported by Rollbook's trainer (epsilon and epsilon_high bound the ratio); leave it unset");
  }
  const level = c.importance_sampling_level;
  if (level != null && level !== "token" && level !== "sequence") {
    return refuse("importance_sampling_level", `'${level}' is not supported: Rollbook's trainer has "token" (GRPO) and "sequence" (GSPO)`);
  }
  const applied: Record<string, unknown> = {};
  const set = (key: keyof TrainerConfig, value: unknown) => {
    applied[key] = value;
  };
  if (c.learning_rate != null) set("learning_rate", c.learning_rate);
  if (c.ppo != null) set("loss", c.ppo ? "ppo" : "cispo");
  if (c.epsilon != null) set("epsilon", c.epsilon);
  if (c.epsilon_high != null) set("epsilon_high", c.epsilon_high);
  if (level != null) set("importance_sampling_level", level);
  if (c.scale_rewards != null) set("scale_rewards", c.scale_rewards);
  const parsed = TrainerConfig.safeParse({ ...base, ...applied });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = String(issue.path[0] ?? "");
    const artKey = key === "loss" ? "ppo" : key;
    return refuse(artKey, issue.message);
  }
  return { ok: true, trainer: parsed.data, recomputeLogprobs: c.precalculate_logprobs === true, applied };
}
