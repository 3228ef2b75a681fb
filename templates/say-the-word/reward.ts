import type { RewardInput, RewardResult } from "rollbook";
import type { Task } from "./scenario";

// Shaped reward: 1 for exactly the word; partial credit for containing it, less the longer the reply.
export default function reward({ task, output }: RewardInput<Task, string>): RewardResult {
  const reply = output.trim().toLowerCase().replace(/^["'`*]+|["'`*.!]+$/g, "");
  const word = task.word.toLowerCase();
  const exact = reply === word ? 1 : 0;
  const contains = reply.includes(word) ? 1 : 0;
  const brevity = Math.max(0, 1 - reply.length / 80);
  const value = exact ? 1 : 0.4 * contains + 0.2 * brevity;
  return { reward: value, metrics: { exact, contains, chars: reply.length } };
}
