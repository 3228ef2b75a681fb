import type { RolloutContext } from "rollbook";
import { z } from "zod";

// Arithmetic word problems: one question, one answer, checked by the math judge (reward.ts). Every row of
// tasks.jsonl is checked against taskSchema before a run starts.
export const taskSchema = z.object({
  question: z.string().min(1),
  answer: z.number(),
  kind: z.enum(["add", "sub", "mul"]),
});
export type Task = z.infer<typeof taskSchema>;

export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  const reply = await ctx.chat([
    { role: "system", content: "Solve the problem with one calculation. Reply with the calculation and its result, like: 7 + 5 = 12" },
    { role: "user", content: ctx.task.question },
  ]);
  return reply.content;
}
