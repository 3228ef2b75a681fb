import type { RolloutContext } from "rollbook";
import { z } from "zod";

// A thing to describe ({"thing": "the sea"}).
export const taskSchema = z.looseObject({ thing: z.string().min(1) });
export type Task = z.infer<typeof taskSchema>;

// Ask for a three-word description. A small model writes a sentence or a paragraph; the task is to stop at three.
export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  const reply = await ctx.chat([
    { role: "system", content: "Reply with exactly three words." },
    { role: "user", content: `Describe ${ctx.task.thing}.` },
  ]);
  return reply.content;
}
