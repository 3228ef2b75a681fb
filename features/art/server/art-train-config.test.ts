/** ART's experimental_config onto the trainer's config: what maps, and each refusal naming its field. */
import { describe, expect, it } from "vitest";
import { TrainerConfig } from "@contracts";
import { mapArtConfig } from "./art-train-config";

const base = TrainerConfig.parse({});

describe("mapArtConfig", () => {
  it("maps what ART's backend.train() sends by default (every key present, most null) onto the run's trainer", () => {
    // What ServerlessBackend._train_model sends for backend.train(model, groups) with ART's defaults.
    const sent = { advantage_balance: 0, epsilon: null, epsilon_high: null, importance_sampling_level: "token", kimi_k2_tau: null, learning_rate: 5e-6, mask_prob_ratio: false, max_negative_advantage_importance_sampling_weight: null, ppo: false, precalculate_logprobs: false, scale_rewards: true };
    const out = mapArtConfig(base, sent);
    expect(out.ok).toBe(true);
    if (!out.ok) return;
    expect(out.trainer.learning_rate).toBe(5e-6);
    expect(out.trainer.loss).toBe("cispo");
    expect(out.trainer.importance_sampling_level).toBe("token");
    expect(out.trainer.scale_rewards).toBe(true);
    // What ART does not send stays the run's.
    expect(out.trainer.lora_rank).toBe(base.lora_rank);
    expect(out.trainer.epsilon).toBe(base.epsilon);
    expect(out.recomputeLogprobs).toBe(false);
    expect(out.applied).toEqual({ learning_rate: 5e-6, loss: "cispo", importance_sampling_level: "token", scale_rewards: true });
  });

  it("maps ppo, the clip bounds, GSPO, Dr. GRPO's reward scaling and precalculate_logprobs", () => {
    const out = mapArtConfig(base, { ppo: true, epsilon: 0.1, epsilon_high: 0.3, importance_sampling_level: "sequence", scale_rewards: false, precalculate_logprobs: true });
    expect(out.ok && out.trainer).toMatchObject({ loss: "ppo", epsilon: 0.1, epsilon_high: 0.3, importance_sampling_level: "sequence", scale_rewards: false });
    expect(out.ok && out.recomputeLogprobs).toBe(true);
  });

  it("no config at all: the run's trainer as it is", () => {
    const out = mapArtConfig(base, null);
    expect(out.ok && out.trainer).toEqual(base);
  });

  it.each([
    [{ advantage_balance: 0.5 }, "experimental_config.advantage_balance"],
    [{ mask_prob_ratio: true }, "experimental_config.mask_prob_ratio"],
    [{ kimi_k2_tau: 0.1 }, "experimental_config.kimi_k2_tau"],
    [{ max_negative_advantage_importance_sampling_weight: 2 }, "experimental_config.max_negative_advantage_importance_sampling_weight"],
    [{ importance_sampling_level: "geometric_average" }, "experimental_config.importance_sampling_level"],
    [{ learning_rate: 5 }, "experimental_config.learning_rate"],
    [{ epsilon: -1 }, "experimental_config.epsilon"],
    [{ truncated_importance_sampling: 2 }, "experimental_config.truncated_importance_sampling"],
  ])("refuses %j, naming %s", (config, param) => {
    const out = mapArtConfig(base, config);
    expect(out.ok).toBe(false);
    if (out.ok) return;
    expect(out.param).toBe(param);
    expect(out.message.startsWith(`${param}: `)).toBe(true);
  });
});
