import { extractAnswer, mathEqual, type RewardInput, type RewardResult } from "rollbook";
import type { Attempt, Task } from "./scenario";

// Half for the call, half for the answer. The call earns in steps — a JSON object of arguments, then one
// with an "expression", then one the calculator could run — so a model that cannot write a good call yet
// still sees which of its attempts came closer (a reward of 0 for every botched call would give no signal).
const CALL_CREDIT = [0, 0.1, 0.3, 0.5] as const;

export default function reward({ task, output }: RewardInput<Task, Attempt>): RewardResult {
  const correct = mathEqual(extractAnswer(output.answer), task.a * task.b) ? 1 : 0;
  return {
    reward: CALL_CREDIT[output.callQuality] + 0.5 * correct,
    metrics: { well_formed_call: output.wellFormed ? 1 : 0, call_quality: output.callQuality, correct },
  };
}
