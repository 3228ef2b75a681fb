// Attacks in the reward function and in groupReward, by task `case` (expected outcomes: ../../cases.ts).
import type { RewardInput } from "rollbook";
import type { Task } from "./attacks";

type Input = RewardInput<Task, unknown>;
const g = globalThis as Record<string, any>;

export const REWARD_ATTACKS: Record<string, (input: Input) => Promise<unknown>> = {
  "reward-loop": async () => {
    for (;;) {
      /* spin */
    }
  },

  // The reward is read once: the getter's later answers never matter. The metrics are a Proxy that claims
  // a thousand keys whose values are objects with valueOf.
  "reward-getters": async () => {
    let reads = 0;
    return {
      get reward() {
        if (++reads > 1) throw new Error("reward read twice");
        return 0.25;
      },
      get metrics() {
        return new Proxy(
          {},
          {
            ownKeys: () => Array.from({ length: 1_000 }, (_, i) => `k${i}`),
            getOwnPropertyDescriptor: () => ({ value: 1, enumerable: true, configurable: true }),
            get: () => ({ valueOf: () => 1 }),
          },
        );
      },
    };
  },

  "reward-valueof": async () => ({ valueOf: () => 1, toString: () => "1" }),

  "reward-proxy": async () =>
    new Proxy(
      {},
      {
        get: () => {
          throw new Error("a trap fired in the reward's result");
        },
      },
    ),

  "reward-huge-metric-name": async () => ({ reward: 1, metrics: { ["m".repeat(1_000_000)]: 1 } }),

  // The reward's input is the isolate's own copy: mutating it, or polluting prototypes, changes nothing
  // outside. Sampling the policy from the reward is refused.
  "reward-mutates-input": async (input) => {
    const messages = input.messages as { content: unknown }[];
    for (const m of messages) m.content = "rewritten by the reward";
    messages.push({ content: "appended" });
    (input.task as { case: string }).case = "rewritten";
    (Object.prototype as Record<string, unknown>).polluted = true;
    const policy = await g.__rollbook_host.chat([{ role: "user", content: "sneak a turn in" }], {});
    delete (Object.prototype as Record<string, unknown>).polluted;
    return policy.ok ? 0 : 1;
  },
};

export const GROUP_ATTACKS: Record<string, (input: { task: Task; rollouts: { reward: number }[] }) => Promise<unknown>> = {
  "group-loop": async () => {
    for (;;) {
      /* spin */
    }
  },

  // An array proxy that claims a billion entries: only as many as the group has are ever read.
  "group-proxy": async () => new Proxy([] as number[], { get: (t, k, r) => (k === "length" ? 1e9 : Reflect.get(t, k, r)) }),
};
