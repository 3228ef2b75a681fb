import type { RewardInput, RewardResult } from "rollbook";
import type { Task } from "./scenario";

// A seeded pathology for the flag corpus: a reward that cannot tell replies apart (a broken check that
// always answers 0.2), so no group has variance at a low reward: collapse, not convergence.
export default function reward({ task, output }: RewardInput<Task, string>): RewardResult {
  const contains = output.toLowerCase().includes(task.word.toLowerCase()) ? 1 : 0;
  return { reward: 0.2, metrics: { contains } };
}
