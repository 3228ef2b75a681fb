import type { RewardInput, RewardResult } from "rollbook";
import type { Task } from "./scenario";

// 1 for the right number alone, 1 / (number of words) for the right number among other words, 0 otherwise.
// Commas in "1,000" are ignored. A first version gave any other number 0.1 ("an answer in digits at
// least"): with that, a 15-word reply holding the right number (1/15) scored below a wrong number, and
// training learnt to write strings of wrong numbers (docs/benchmarks.md, "Defaults that learn"). Every
// reply with the right number must beat every reply without it.
export default function reward({ task, output }: RewardInput<Task, string>): RewardResult {
  const words = output.replace(/(\d),(?=\d{3})/g, "$1").split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  const numbers = words.filter((w) => /^\d+$/.test(w)).map(Number);
  const correct = numbers.includes(task.number) ? 1 : 0;
  const reward = correct ? 1 / words.length : 0;
  return { reward, metrics: { exact: correct && words.length === 1 ? 1 : 0, correct, words: words.length } };
}
