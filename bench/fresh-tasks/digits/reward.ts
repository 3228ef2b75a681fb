import type { RewardInput, RewardResult } from "rollbook";
import type { Task } from "./scenario";

// 1 for the right number alone; the right number among other words gets 1 / (number of words); any other
// number 0.1 (it is at least an answer in digits); no number at all 0. Commas in "1,000" are ignored.
export default function reward({ task, output }: RewardInput<Task, string>): RewardResult {
  const words = output.replace(/(\d),(?=\d{3})/g, "$1").split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  const numbers = words.filter((w) => /^\d+$/.test(w)).map(Number);
  const correct = numbers.includes(task.number) ? 1 : 0;
  const reward = correct ? 1 / words.length : numbers.length > 0 ? 0.1 : 0;
  return { reward, metrics: { exact: correct && words.length === 1 ? 1 : 0, correct, words: words.length } };
}
