import type { ChatMessage, RolloutContext } from "rollbook";
import { z } from "zod";
import { calculator } from "./lib/calculator";

// A tool-use agent: multiplications too big to do in one's head, and a calculator tool. One worked
// exchange (EXAMPLE) shows the model what a call looks like before the real question. The first turn
// must call the calculator (a named tool_choice: the engine starts the reply with the call up to `"arguments":` and the model
// writes the call); the tool's result goes back, and the second turn gives the answer. A small model
// first has to learn to write calls the tool can read: the reward pays for that and for the answer.
// (runAgent does this loop for you when the model may choose; this is the same loop written out.)
export const taskSchema = z.object({ a: z.number().int(), b: z.number().int() });
export type Task = z.infer<typeof taskSchema>;

export interface Attempt {
  answer: string;
  /** How far the call got: 0 unreadable, 1 a JSON object of arguments, 2 with an "expression" string, 3 the calculator ran it. */
  callQuality: 0 | 1 | 2 | 3;
  /** The call could be read and run. */
  wellFormed: boolean;
  /** What the tool returned, or why the call could not be run. */
  toolResult: string;
}

const SYSTEM = "You are a careful assistant with a calculator. Use the calculate tool for arithmetic, then give the result.";

// One worked exchange before the real question (few-shot): a 135M model copies the shape of a call it has
// seen far more readily than it follows a description of one.
const EXAMPLE: ChatMessage[] = [
  { role: "user", content: "What is 12 * 34?" },
  {
    role: "assistant",
    content: "",
    tool_calls: [{ id: "call_example", type: "function", function: { name: "calculate", arguments: JSON.stringify({ expression: "12 * 34" }) } }],
  },
  { role: "tool", tool_call_id: "call_example", name: "calculate", content: "408" },
  { role: "assistant", content: "12 * 34 = 408" },
];

export default async function rollout(ctx: RolloutContext<Task>): Promise<Attempt> {
  const messages: ChatMessage[] = [
    { role: "system", content: SYSTEM },
    ...EXAMPLE,
    { role: "user", content: `What is ${ctx.task.a} * ${ctx.task.b}?` },
  ];
  const first = await ctx.chat(messages, { tools: [calculator], tool_choice: { type: "function", function: { name: "calculate" } }, max_tokens: 32 });
  messages.push(first.message);
  const call = first.toolCalls[0];
  if (!call) return { answer: first.content, callQuality: 0, wellFormed: false, toolResult: first.malformedToolCalls[0]?.error ?? "no tool call" };
  const args = calculator.parseArguments(call.function.arguments);
  let toolResult: string;
  let callQuality: Attempt["callQuality"] = 1;
  if (call.function.name !== calculator.name) toolResult = `Error: there is no tool named "${call.function.name}"`;
  else if (!args.ok) toolResult = `Error: ${args.error}`;
  else {
    callQuality = 2;
    try {
      toolResult = String(await calculator.execute(args.args, { ctx, toolCallId: call.id }));
      callQuality = 3;
    } catch (err) {
      toolResult = `Error: ${(err as Error).message}`;
    }
  }
  const wellFormed = callQuality === 3;
  messages.push({ role: "tool", tool_call_id: call.id, name: call.function.name, content: toolResult });
  const second = await ctx.chat(messages, { tools: [calculator], tool_choice: "none", max_tokens: 24 });
  return { answer: second.content, callQuality, wellFormed, toolResult };
}
