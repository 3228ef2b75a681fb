// Rewards of the corpus: attacks in the reward function and in groupReward (lib/reward-attacks.ts) for the
// tasks that name one; otherwise 1 for an ordinary reply that contains the word (0.5 for any other reply),
// and 1 for an attack rollout that got this far.
import type { RewardInput } from "rollbook";
import type { Task } from "./scenario";
import { GROUP_ATTACKS, REWARD_ATTACKS } from "./lib/reward-attacks";

export default async function reward(input: RewardInput<Task, unknown>): Promise<unknown> {
  const attack = REWARD_ATTACKS[input.task.case];
  if (attack) return attack(input);
  if (input.task.case !== "ordinary") return 1;
  const reply = typeof input.output === "string" ? input.output.toLowerCase() : "";
  return reply.includes((input.task.word ?? "apple").toLowerCase()) ? 1 : 0.5;
}

export async function groupReward(input: { task: Task; rollouts: { reward: number }[] }): Promise<unknown> {
  const attack = GROUP_ATTACKS[input.task.case];
  if (attack) return attack(input);
  return input.rollouts.map((r) => r.reward);
}
