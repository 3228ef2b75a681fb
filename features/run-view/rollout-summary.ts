/**
 * A rollout as the run page's first load ships it: everything the list, its filters, the group view and the
 * header need, without the conversation (messages, logs, output, per-turn figures), which the page fetches
 * when a transcript is opened (GET /api/runs/<id>/rollouts?seqs=…). Why: the conversations are most of a
 * run's bytes (a 10,000-rollout run is ~18 MB of trajectories), and parsing, folding and holding them all
 * before the first row shows is where the page's time went (docs/benchmarks.md, "Run page").
 *
 * Written once for both sides: Postgres builds summaries for stored rollouts (server/run-events-json.ts,
 * SUMMARY_SQL mirrors `replyPreview`), and the page summarises a full trajectory that arrives live the same
 * way (run-state.ts); the servertest checks the two agree.
 */
import type { ChatMessage, Trajectory } from "@contracts";

/** Fields of a Trajectory left out of a summary (fetched with the transcript). */
export const SUMMARY_OMITS = ["messages", "logs", "output", "turns", "model"] as const;

/** The most whole rollouts one request for them returns (an export asks in slices of this). */
export const MAX_ROLLOUTS_PER_REQUEST = 500;

/** Characters of the last reply a summary keeps: the list shows 200, a group card four short lines. */
export const REPLY_PREVIEW_CHARS = 200;

export type RolloutSummary = Omit<Trajectory, (typeof SUMMARY_OMITS)[number]> & {
  /** The last assistant reply's text (its first REPLY_PREVIEW_CHARS characters), or `→ tool, tool` when it only called tools; "" when none. */
  reply: string;
};

/** The first `n` characters (code points, as Postgres's left() counts them) of `s`. */
function leftChars(s: string, n: number): string {
  if (s.length <= n) return s;
  // Code points, not UTF-16 units: an emoji cut in half would differ from what Postgres sends.
  return Array.from(s.slice(0, 2 * n))
    .slice(0, n)
    .join("");
}

/** The last assistant reply, the part of a rollout one most wants to see at a glance (see RolloutSummary.reply). */
export function replyPreview(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "assistant") continue;
    if (m.content) return leftChars(m.content, REPLY_PREVIEW_CHARS);
    if (m.tool_calls?.length) return `→ ${m.tool_calls.map((c) => c.function.name).join(", ")}`;
  }
  return "";
}

/** A full trajectory's summary (what the first load would have sent for it). */
export function summariseTrajectory(t: Trajectory): RolloutSummary {
  const { messages, logs: _logs, output: _output, turns: _turns, model: _model, ...rest } = t;
  return { ...rest, reply: replyPreview(messages) };
}
