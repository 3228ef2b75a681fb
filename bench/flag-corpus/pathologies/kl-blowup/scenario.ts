import type { RolloutContext } from "rollbook";
import { z } from "zod";

// Every row of tasks.jsonl is checked against taskSchema before a run starts, so a row without a word
// ({"wrd": "x"}) is named at its line instead of asking the model to say "undefined". Loose: other fields
// a row carries reach the scenario and the reward as they are.
export const taskSchema = z.looseObject({ word: z.string().min(1) });
export type Task = z.infer<typeof taskSchema>;

// Ask the model to say one given word. A small model answers "A tunnel." or a whole sentence; GRPO
// teaches it to answer with exactly the word.
export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  const reply = await ctx.chat([
    { role: "system", content: "Answer with one word." },
    { role: "user", content: `Say the word ${ctx.task.word}.` },
  ]);
  ctx.log(`asked for ${ctx.task.word}`);
  return reply.content;
}
