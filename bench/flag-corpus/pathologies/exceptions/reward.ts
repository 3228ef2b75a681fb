import type { RewardInput, RewardResult } from "rollbook";
import type { Task } from "./scenario";

// 1 / (number of words in the reply) if the word is one of them, else 0. Exactly the word: 1; "A tunnel.":
// 0.5; "The word is tunnel.": 0.25; a 16-word sentence: 0.06. Every extra word costs something, however
// long the reply, so the 8 replies of a group almost never tie and GRPO always has a direction: shorter,
// down to just the word. Case and punctuation are ignored; "tunnels" or "tunnelvision" do not count.
export default function reward({ task, output }: RewardInput<Task, string>): RewardResult {
  const words = output.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  const word = task.word.toLowerCase();
  const contains = words.includes(word) ? 1 : 0;
  const exact = contains && words.length === 1 ? 1 : 0;
  return { reward: contains ? 1 / words.length : 0, metrics: { exact, contains, words: words.length } };
}
