/**
 * A training job's rollouts with their prompt token counts, pure. ART sends no prompt ids, so a job's
 * rollouts are stored at once with the prompt counts unknown (null: art-transcript.ts) — live before the step
 * trains. The runner then renders every prompt through the engine's /tokenize to rebuild the sequences it
 * trains on (gpu-runner/src/loop/external-samples.ts), so it knows each reply's prompt length exactly and
 * sends them on its "prepared" line; these are the rollouts to store again with them (the later rollout.finished
 * of an id replaces the earlier, in the projection and on the page).
 */
import type { Trajectory } from "@contracts";

/**
 * `counts[id]`: each sampled reply's prompt length, in the order of the rollout's turns (its histories in
 * order, ART's additional_histories after messages_and_choices). Returns only the rollouts it could count:
 * one whose counts do not match its turns one for one is left as it was (unknown beats a wrong number).
 */
export function withPromptTokens(rollouts: readonly Trajectory[], counts: Readonly<Record<string, readonly number[]>>): Trajectory[] {
  const out: Trajectory[] = [];
  for (const t of rollouts) {
    const c = Object.hasOwn(counts, t.id) ? counts[t.id] : undefined;
    const turns = t.turns ?? [];
    if (!c || turns.length === 0 || c.length !== turns.length) continue;
    out.push({
      ...t,
      tokens: { ...t.tokens, prompt: c.reduce((n, x) => n + x, 0) },
      turns: turns.map((turn, i) => ({ ...turn, prompt_tokens: c[i]! })),
    });
  }
  return out;
}
