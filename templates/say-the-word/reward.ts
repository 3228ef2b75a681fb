import type { RewardInput, RewardResult } from "rollbook";
import type { Task } from "./scenario";

// Shaped reward: 1 for exactly the word (case and surrounding punctuation ignored); otherwise credit only
// for containing it, more the shorter the reply, so every step towards "just the word" pays and a long
// reply that mentions the word is no resting place.
export default function reward({ task, output }: RewardInput<Task, string>): RewardResult {
  const reply = output.trim().toLowerCase().replace(/^[\s"'`*.,!:;-]+|[\s"'`*.,!:;-]+$/g, "");
  const word = task.word.toLowerCase();
  const words = reply.split(/\s+/).filter(Boolean).length;
  const exact = reply === word ? 1 : 0;
  const contains = reply.includes(word) ? 1 : 0;
  const brevity = Math.max(0, 1 - words / 12);
  const value = exact ? 1 : contains * (0.2 + 0.5 * brevity);
  return { reward: value, metrics: { exact, contains, words } };
}
