import type { RolloutContext } from "rollbook";
import { z } from "zod";

export const taskSchema = z.looseObject({ word: z.string().min(1) });
export type Task = z.infer<typeof taskSchema>;

// A seeded pathology for the flag corpus: the scenario's own code starts failing mid-run (a tool that
// breaks from step 5 on, for about half the replies), as when a dependency changes under a running job.
export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  const reply = await ctx.chat([
    { role: "system", content: "Answer with one word." },
    { role: "user", content: `Say the word ${ctx.task.word}.` },
  ]);
  if (ctx.step >= 5 && reply.content.length % 2 === 0) throw new Error(`lookup service failed for "${ctx.task.word}"`);
  return reply.content;
}
