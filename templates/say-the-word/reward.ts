import type { RewardInput, RewardResult } from "rollbook";
import type { Task } from "./scenario";

// Shaped reward: 1 for exactly the word (case and surrounding punctuation ignored); otherwise partial
// credit for containing it and for being short, so near-misses rank above rambling.
export default function reward({ task, output }: RewardInput<Task, string>): RewardResult {
  const reply = output.trim().toLowerCase().replace(/^[\s"'`*.,!:;-]+|[\s"'`*.,!:;-]+$/g, "");
  const word = task.word.toLowerCase();
  const words = reply.split(/\s+/).filter(Boolean).length;
  const exact = reply === word ? 1 : 0;
  const contains = reply.includes(word) ? 1 : 0;
  const brevity = Math.max(0, 1 - words / 12);
  const value = exact ? 1 : 0.5 * contains + 0.3 * brevity;
  return { reward: value, metrics: { exact, contains, words } };
}
