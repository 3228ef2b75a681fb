/**
 * Judges for reward functions, imported from "rollbook" in reward.ts. Everything here is pure and
 * deterministic, runs inside the sandbox (ES2022 only, no Node or DOM), and stays linear on adversarial
 * model output.
 *
 * - Text: exactMatch, regexMatch, regexFind.
 * - Math: extractAnswer (the final answer of a solution), parseMathValue (its exact value), mathEqual.
 * - LLM judge: buildJudgeMessages → the judge model → parseJudgeScore (a last line `SCORE: 0.7`).
 * - Relative judge (RULER): buildRulerMessages over a group's trajectories → the judge model →
 *   parseRulerScores (JSON `{"scores": [{"trajectory_id", "explanation", "score"}]}`).
 *
 * @example
 * import { extractAnswer, mathEqual } from "rollbook";
 * export default function reward({ task, output }: RewardInput<{ answer: string }, string>) {
 *   return mathEqual(extractAnswer(output), task.answer) ? 1 : 0;
 * }
 */

export { exactMatch, normalizeForMatch, regexFind, regexMatch } from "./match";
export type { MatchOptions, RegexFindResult, RegexOptions } from "./match";

export { extractAnswer } from "./extract-answer";
export { parseMathValue } from "./math-value";
export type { MathValue } from "./math-value";
export type { Rational } from "./rational";
export { mathEqual } from "./math";
export type { MathEqualOptions } from "./math";

export { commonPrefix, serializeMessages } from "./messages";
export type { ChatMessage, SerializeOptions, ToolCall } from "./messages";

export { DEFAULT_JUDGE_RUBRIC, buildJudgeMessages, parseJudgeScore } from "./llm-judge";
export type { JudgeInput } from "./llm-judge";

export {
  DEFAULT_RULER_RUBRIC,
  JudgeParseError,
  RULER_RESPONSE_SCHEMA,
  buildRulerMessages,
  parseRulerResponse,
  parseRulerScores,
} from "./ruler";
export type { RulerInput, RulerResult } from "./ruler";
