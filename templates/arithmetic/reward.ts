import { extractAnswer, mathEqual, type RewardInput, type RewardResult } from "rollbook";
import type { Task } from "./scenario";

// The math judge decides: the final number of the reply must equal the answer exactly (mathEqual reads
// "12", "12 apples", "The answer is 12." or "\boxed{12}" alike). A small bonus for replying with a
// number at all keeps groups from being all-zero while the model is still wrong on everything.
export default function reward({ task, output }: RewardInput<Task, string>): RewardResult {
  const answer = extractAnswer(output);
  const correct = mathEqual(answer, task.answer) ? 1 : 0;
  const numeric = answer !== null && /\d/.test(answer) ? 1 : 0;
  return { reward: correct + 0.1 * numeric * (1 - correct), metrics: { correct, numeric, [`correct_${task.kind}`]: correct } };
}
