import type { RolloutContext } from "rollbook";
import { z } from "zod";

// Someone to greet ({"name": "Maria"}).
export const taskSchema = z.looseObject({ name: z.string().min(1) });
export type Task = z.infer<typeof taskSchema>;

// Ask for a greeting in capital letters. A small model greets politely in ordinary case; the task is to shout.
export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  const reply = await ctx.chat([
    { role: "system", content: "Reply in capital letters only." },
    { role: "user", content: `Greet ${ctx.task.name}.` },
  ]);
  return reply.content;
}
