import type { RolloutContext } from "rollbook";
import { z } from "zod";

// A number written in words and the digits it stands for ({"words": "forty-two", "number": 42}).
export const taskSchema = z.looseObject({ words: z.string().min(1), number: z.number().int() });
export type Task = z.infer<typeof taskSchema>;

// Ask for a number in digits. A small model tends to explain ("The number forty-two is 42.") or to repeat
// the words; the task is to answer with the digits alone.
export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  const reply = await ctx.chat([
    { role: "system", content: "Answer with a number in digits only." },
    { role: "user", content: `Write ${ctx.task.words} in digits.` },
  ]);
  return reply.content;
}
