import type { RolloutContext } from "rollbook";

export interface Task {
  word: string;
}

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
