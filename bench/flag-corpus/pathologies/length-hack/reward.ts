import type { RewardInput, RewardResult } from "rollbook";
import type { Task } from "./scenario";

// A seeded pathology for the flag corpus (docs/benchmarks.md "Flags"): a reward that pays for length more
// than for the word, the classic reward hack. "length" comes to drive the reward; "contains" falls.
export default function reward({ task, output }: RewardInput<Task, string>): RewardResult {
  const words = output.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  const contains = words.includes(task.word.toLowerCase()) ? 1 : 0;
  const length = Math.min(words.length, 16) / 16;
  return { reward: 0.3 * contains + 0.7 * length, metrics: { contains, length } };
}
