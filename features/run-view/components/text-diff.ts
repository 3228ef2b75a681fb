/**
 * A word diff of two rollouts' texts for the group view, computed by the `diff` package (jsdiff) rather
 * than by hand. Bounded: two long, very different replies could make an O(N·D) diff slow on the main
 * thread, so it gives up after DIFF_TIMEOUT_MS and says so instead of freezing the page.
 */
import { diffWordsWithSpace } from "diff";
import type { WholeRollout } from "./run-state";

export interface DiffPart {
  text: string;
  kind: "same" | "added" | "removed";
}

export type TextDiff = { ok: true; parts: DiffPart[]; added: number; removed: number } | { ok: false; reason: string };

export const DIFF_TIMEOUT_MS = 300;

/** Word diff of `a` → `b`: removed parts come from `a`, added ones from `b`; counts are in words. */
export function wordDiff(a: string, b: string, timeoutMs = DIFF_TIMEOUT_MS): TextDiff {
  const changes = diffWordsWithSpace(a, b, { timeout: timeoutMs });
  if (!changes) return { ok: false, reason: `the texts differ too much to diff within ${timeoutMs} ms` };
  let added = 0;
  let removed = 0;
  const parts: DiffPart[] = changes.map((c) => {
    const words = c.value.split(/\s+/).filter(Boolean).length;
    if (c.added) added += words;
    if (c.removed) removed += words;
    return { text: c.value, kind: c.added ? "added" : c.removed ? "removed" : "same" };
  });
  return { ok: true, parts, added, removed };
}

/**
 * What the model wrote in a rollout, the part worth diffing between members of a group: every assistant
 * turn's text and tool calls, in order (prompts are the same across a group, so they are left out).
 */
export function rolloutText(r: Pick<WholeRollout, "messages">): string {
  const out: string[] = [];
  for (const m of r.messages) {
    if (m.role !== "assistant") continue;
    if (m.content) out.push(m.content);
    for (const c of m.tool_calls ?? []) out.push(`→ ${c.function.name}(${c.function.arguments})`);
  }
  return out.join("\n\n");
}
