import type { ChatMessage, RolloutContext } from "rollbook";
import { z } from "zod";

// An agent whose tool comes from an MCP server: @modelcontextprotocol/server-everything, started by the
// runner over stdio (config.json → mcp). Its get-sum tool adds two numbers. The first turn must call it (a
// named tool_choice: the engine writes the call up to its arguments, the model writes the arguments);
// the server's answer goes back, and the second turn gives the result. One worked exchange (example())
// comes before the real question.
export const taskSchema = z.object({ a: z.number().int(), b: z.number().int() });
export type Task = z.infer<typeof taskSchema>;

export interface Attempt {
  answer: string;
  /** 0 unreadable, 1 a JSON object of arguments, 2 the server ran the call. */
  callQuality: 0 | 1 | 2;
  /** The call carried exactly the task's two numbers. */
  rightArguments: boolean;
}

// One worked exchange before the real question (few-shot): a 135M model copies the shape of a call it has
// seen far more readily than it follows the tool's JSON schema. The tool text is what get-sum answers.
function example(toolName: string): ChatMessage[] {
  return [
    { role: "user", content: "What is 1200 + 3400?" },
    {
      role: "assistant",
      content: "",
      tool_calls: [{ id: "call_example", type: "function", function: { name: toolName, arguments: JSON.stringify({ a: 1200, b: 3400 }) } }],
    },
    { role: "tool", tool_call_id: "call_example", name: toolName, content: "The sum of 1200 and 3400 is 4600." },
    { role: "assistant", content: "1200 + 3400 = 4600" },
  ];
}

export default async function rollout(ctx: RolloutContext<Task>): Promise<Attempt> {
  const [getSum] = await ctx.mcp.tools("everything");
  if (!getSum) throw new Error("server-everything offered no get-sum tool");
  const messages: ChatMessage[] = [
    { role: "system", content: "You are a careful assistant. Use the get-sum tool to add numbers, then give the result." },
    ...example(getSum.name),
    { role: "user", content: `What is ${ctx.task.a} + ${ctx.task.b}?` },
  ];
  const first = await ctx.chat(messages, { tools: [getSum], tool_choice: { type: "function", function: { name: getSum.name } }, max_tokens: 32 });
  messages.push(first.message);
  const call = first.toolCalls[0];
  if (!call) return { answer: first.content, callQuality: 0, rightArguments: false };
  const args = getSum.parseArguments(call.function.arguments);
  let callQuality: Attempt["callQuality"] = 1;
  let result = "Error: the arguments must be a JSON object";
  let rightArguments = false;
  if (args.ok) {
    // A refusal by the server (wrong argument types) comes back as an error result for the model to read.
    const r = await getSum.execute(args.args, { ctx, toolCallId: call.id });
    result = r.isError ? `Error: ${r.text}` : r.text;
    if (!r.isError) callQuality = 2;
    const { a, b } = args.args as { a?: unknown; b?: unknown };
    rightArguments = (a === ctx.task.a && b === ctx.task.b) || (a === ctx.task.b && b === ctx.task.a);
  }
  messages.push({ role: "tool", tool_call_id: call.id, name: call.function.name, content: result });
  const second = await ctx.chat(messages, { tools: [getSum], tool_choice: "none", max_tokens: 24 });
  return { answer: second.content, callQuality, rightArguments };
}
