import { extractAnswer, mathEqual, type RewardInput, type RewardResult } from "rollbook";
import type { Attempt, Task } from "./scenario";

// Half for calling the calculator properly (a well-formed call it could run), half for the right answer.
// A botched call costs a little, so the model is pushed towards writing calls the tool can read.
export default function reward({ task, output }: RewardInput<Task, Attempt>): RewardResult {
  const wellFormed = output.toolCalls > 0 ? 1 : 0;
  const correct = mathEqual(extractAnswer(output.answer), task.a * task.b) ? 1 : 0;
  const botched = output.malformedToolCalls + output.toolErrors > 0 ? 1 : 0;
  return {
    reward: 0.5 * wellFormed + 0.5 * correct - 0.1 * botched,
    metrics: { well_formed_call: wellFormed, correct, botched_call: botched },
  };
}
