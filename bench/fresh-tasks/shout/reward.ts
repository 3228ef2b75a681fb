import type { RewardInput, RewardResult } from "rollbook";
import type { Task } from "./scenario";

// The share of the reply's letters that are capitals (0 for a reply without letters), so every lower-case
// letter costs a little and a group's replies rarely tie. Metrics: whether the reply is all capitals, and
// whether it names the person (not rewarded, watched: shouting something else is not a greeting).
export default function reward({ task, output }: RewardInput<Task, string>): RewardResult {
  const letters = [...output].filter((c) => c.toLowerCase() !== c.toUpperCase());
  const upper = letters.filter((c) => c === c.toUpperCase()).length;
  const share = letters.length ? upper / letters.length : 0;
  const named = output.toLowerCase().includes(task.name.toLowerCase()) ? 1 : 0;
  return { reward: share, metrics: { all_caps: letters.length && share === 1 ? 1 : 0, named, letters: letters.length } };
}
