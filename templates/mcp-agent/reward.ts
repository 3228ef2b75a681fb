import { extractAnswer, mathEqual, type RewardInput, type RewardResult } from "rollbook";
import type { Attempt, Task } from "./scenario";

// The call earns in steps (a JSON object, then a call the server ran, then the task's own numbers) and
// the right final answer earns the rest, so every improvement on the way is rewarded.
export default function reward({ task, output }: RewardInput<Task, Attempt>): RewardResult {
  const correct = mathEqual(extractAnswer(output.answer), task.a + task.b) ? 1 : 0;
  const call = [0, 0.1, 0.3][output.callQuality] + (output.rightArguments ? 0.2 : 0);
  return {
    reward: call + 0.5 * correct,
    metrics: { well_formed_call: output.callQuality === 2 ? 1 : 0, right_arguments: output.rightArguments ? 1 : 0, correct },
  };
}
