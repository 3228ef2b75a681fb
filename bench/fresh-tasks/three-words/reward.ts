import type { RewardInput, RewardResult } from "rollbook";
import type { Task } from "./scenario";

// 1 for exactly three words; n/3 for fewer, 3/n for more (a 12-word sentence: 0.25), so a longer reply
// always scores lower and a group's replies rarely tie. Punctuation is not a word.
export default function reward({ output }: RewardInput<Task, string>): RewardResult {
  const n = output.split(/[^\p{L}\p{N}'-]+/u).filter((w) => /[\p{L}\p{N}]/u.test(w)).length;
  const reward = n === 0 ? 0 : n <= 3 ? n / 3 : 3 / n;
  return { reward, metrics: { exact: n === 3 ? 1 : 0, words: n } };
}
