import type { RewardInput, RewardResult } from "rollbook";
import type { Game, Task } from "./scenario";

// Winning pays most; a legal game that ends in a draw or a loss still beats breaking the rules, and each
// legal move earns a little, so a model that cannot win yet is still pushed towards playing properly.
const OUTCOME = { win: 1, draw: 0.6, loss: 0.3, illegal: 0 } as const;

export default function reward({ output }: RewardInput<Task, Game>): RewardResult {
  const legalShare = output.legalMoves / Math.max(1, output.moves);
  return {
    reward: 0.8 * OUTCOME[output.result] + 0.2 * legalShare,
    metrics: { win: output.result === "win" ? 1 : 0, illegal: output.result === "illegal" ? 1 : 0, moves: output.moves },
  };
}
