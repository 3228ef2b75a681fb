import { runAgent, type RolloutContext } from "rollbook";
import { z } from "zod";
import { calculator } from "./lib/calculator";

// A tool-use agent: multiplications too big to do in one's head, a calculator tool, and the standard agent
// loop (call the tool, read its result, answer). The reward pays for a well-formed call and for the answer.
export const taskSchema = z.object({ a: z.number().int(), b: z.number().int() });
export type Task = z.infer<typeof taskSchema>;

export interface Attempt {
  answer: string;
  toolCalls: number;
  malformedToolCalls: number;
  toolErrors: number;
}

const SYSTEM = "You are a careful assistant with a calculator. Use the calculate tool for arithmetic, then give the result.";

export default async function rollout(ctx: RolloutContext<Task>): Promise<Attempt> {
  const result = await runAgent(ctx, {
    messages: [
      { role: "system", content: SYSTEM },
      { role: "user", content: `What is ${ctx.task.a} * ${ctx.task.b}?` },
    ],
    tools: [calculator],
    maxTurns: 3,
    chat: { max_tokens: 48 },
  });
  return { answer: result.answer, toolCalls: result.toolCalls, malformedToolCalls: result.malformedToolCalls, toolErrors: result.toolErrors };
}
