// The hostile corpus as one experiment: each task names the attack its rollout makes (lib/attacks.ts);
// tasks with no attack are ordinary rollouts that must finish normally in the same run.
import type { RolloutContext } from "rollbook";
import { SCENARIO_ATTACKS, type Task } from "./lib/attacks";

export type { Task };

export default async function rollout(ctx: RolloutContext<Task>): Promise<unknown> {
  const attack = SCENARIO_ATTACKS[ctx.task.case];
  if (attack) return attack(ctx);
  const reply = await ctx.chat([
    { role: "system", content: "Answer with one word." },
    { role: "user", content: `Say the word ${ctx.task.word ?? "apple"}.` },
  ]);
  ctx.log(`asked for ${ctx.task.word ?? "apple"}`);
  return reply.content;
}
