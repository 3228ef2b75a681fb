import { runAgent, type RolloutContext } from "rollbook";
import { z } from "zod";

// An agent whose tools come from an MCP server: @modelcontextprotocol/server-everything, started by the
// runner over stdio (config.json → mcp). Its get-sum tool adds two numbers; the model must call it with
// the right arguments and report the result.
export const taskSchema = z.object({ a: z.number().int(), b: z.number().int() });
export type Task = z.infer<typeof taskSchema>;

export interface Attempt {
  answer: string;
  toolCalls: number;
  malformedToolCalls: number;
  toolErrors: number;
}

export default async function rollout(ctx: RolloutContext<Task>): Promise<Attempt> {
  const tools = await ctx.mcp.tools("everything");
  const result = await runAgent(ctx, {
    messages: [
      { role: "system", content: "You are a careful assistant. Use the get-sum tool to add numbers, then give the result." },
      { role: "user", content: `What is ${ctx.task.a} + ${ctx.task.b}?` },
    ],
    tools,
    maxTurns: 3,
    chat: { max_tokens: 48 },
  });
  return { answer: result.answer, toolCalls: result.toolCalls, malformedToolCalls: result.malformedToolCalls, toolErrors: result.toolErrors };
}
