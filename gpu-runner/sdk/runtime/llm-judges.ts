/**
 * The judges that call a model: llmJudge (one rollout against a rubric) and rulerJudge (a group's
 * rollouts relative to each other, as OpenPipe ART's RULER does). Prompts and parsers are the pure
 * functions in ./judges; the model is the experiment's judge (config.json → judge), reached through
 * judgeChat, whose tokens and cost the runner counts.
 */
import type * as Sdk from "../../../contracts/sdk/rollbook";
import { HostError } from "./host";
import { judgeChat } from "./judge-chat";
import { JudgeParseError, buildJudgeMessages, buildRulerMessages, parseJudgeScore, parseRulerResponse } from "./judges";

/** Judges see long replies cut in the middle: one runaway rollout must not push the judge past its context. */
const MAX_MESSAGE_CHARS = 4_000;
/** A judge that does not answer in the asked format gets one more try (sampling noise, not a verdict). */
const ATTEMPTS = 2;

const addUsage = (a: Sdk.JudgeUsage, b: Sdk.JudgeUsage): Sdk.JudgeUsage => ({
  promptTokens: a.promptTokens + b.promptTokens,
  completionTokens: a.completionTokens + b.completionTokens,
  costUsd: a.costUsd + b.costUsd,
});
const NO_USAGE: Sdk.JudgeUsage = { promptTokens: 0, completionTokens: 0, costUsd: 0 };

const asText = (v: unknown): string => (typeof v === "string" ? v : JSON.stringify(v) ?? String(v));
const tail = (s: string) => (s.length > 200 ? `…${s.slice(-200)}` : s);

export const llmJudge: typeof Sdk.llmJudge = async (input, options) => {
  const messages = buildJudgeMessages({
    task: asText(input.task),
    output: input.messages && input.messages.length > 0 ? input.messages : asText(input.output),
    rubric: options.rubric,
    reference: options.reference,
    maxMessageChars: MAX_MESSAGE_CHARS,
  });
  let usage = NO_USAGE;
  let last = "";
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const reply = await judgeChat(messages);
    usage = addUsage(usage, reply.usage);
    last = reply.content;
    const score = parseJudgeScore(reply.content);
    if (score !== null) {
      const explanation = reply.content.replace(/[\s\S]*<\/think>/, "").replace(/\s*\**\s*score\s*[:=][\s\S]*$/i, "").trim();
      return { score, explanation, usage };
    }
  }
  throw new HostError("JudgeError", `the judge gave no score (it must end with "SCORE: <0..1>"): ${JSON.stringify(tail(last))}`);
};

export const rulerJudge: typeof Sdk.rulerJudge = (options = {}) => async ({ rollouts }) => {
  const messages = buildRulerMessages({ trajectories: rollouts.map((r) => r.messages), rubric: options.rubric, maxMessageChars: MAX_MESSAGE_CHARS });
  let problem = "";
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const reply = await judgeChat(messages);
    try {
      const { scores } = parseRulerResponse(reply.content, rollouts.length);
      return { rewards: scores, metrics: scores.map((s) => ({ ruler_score: s })) };
    } catch (err) {
      if (!(err instanceof JudgeParseError)) throw err;
      problem = `${err.message}: ${JSON.stringify(tail(reply.content))}`;
    }
  }
  throw new HostError("JudgeError", `the RULER judge's answer could not be read: ${problem}`);
};
