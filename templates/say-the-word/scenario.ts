import type { RolloutContext } from "rollbook";

export interface Task {
  word: string;
}

// Ask the model to answer with exactly one given word. Small models add chatter; GRPO teaches them not to.
export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  const reply = await ctx.chat([
    { role: "system", content: "You are a terse assistant." },
    { role: "user", content: `Reply with only the word "${ctx.task.word}" and nothing else.` },
  ]);
  ctx.log(`asked for ${ctx.task.word}`);
  return reply.content;
}
