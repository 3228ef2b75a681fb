"use client";
/**
 * Whole rollouts for the run page, which first loads summaries only (rollout-summary.ts): a transcript opened,
 * the two rollouts of a diff, an export. A rollout that arrived whole (live) is used as it is; the others are
 * read from GET /api/runs/<id>/rollouts?seqs=… (the trajectory at a seq never changes, so an answer is kept).
 * Also the search box's server half (…/rollouts?q=), for the rollouts whose messages the page does not hold.
 */
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useEffect, useMemo, useState } from "react";
import { MAX_ROLLOUTS_PER_REQUEST } from "../rollout-summary";
import { isWholeRollout, type Rollout, type WholeRollout } from "./run-state";
import type { TextMatches } from "./rollout-filter";

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { cache: "no-store" });
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { error?: { message?: string } } | null;
    throw new Error(body?.error?.message ?? `HTTP ${res.status}`);
  }
  return (await res.json()) as T;
}

const rolloutsUrl = (runId: string) => `/api/runs/${encodeURIComponent(runId)}/rollouts`;

/** These rollouts whole, in the order given (read in slices of MAX_ROLLOUTS_PER_REQUEST; one missing from the log is an error). */
export async function fetchWholeRollouts(runId: string, rollouts: readonly Rollout[]): Promise<WholeRollout[]> {
  const missing = rollouts.filter((r) => !isWholeRollout(r)).map((r) => r.seq);
  const bySeq = new Map<number, WholeRollout>();
  for (let i = 0; i < missing.length; i += MAX_ROLLOUTS_PER_REQUEST) {
    const slice = missing.slice(i, i + MAX_ROLLOUTS_PER_REQUEST);
    const got = await getJson<Omit<WholeRollout, "reply">[]>(`${rolloutsUrl(runId)}?seqs=${slice.join(",")}`);
    for (const t of got) bySeq.set(t.seq, t as WholeRollout);
  }
  return rollouts.map((r) => {
    if (isWholeRollout(r)) return r;
    const whole = bySeq.get(r.seq);
    if (!whole) throw new Error(`rollout ${r.id} (seq ${r.seq}) is not in the run's stored log`);
    // The summary's reply preview stays (the list and this rollout then show the same text).
    return { ...whole, reply: r.reply };
  });
}

/** These rollouts whole (undefined entries stay undefined), for a transcript or a diff. */
export function useWholeRollouts(runId: string, rollouts: readonly (Rollout | undefined)[]) {
  const wanted = rollouts.filter((r): r is Rollout => r !== undefined);
  const allWhole = wanted.every(isWholeRollout);
  const query = useQuery({
    queryKey: ["run-view", "whole-rollouts", runId, wanted.map((r) => `${r.id}@${r.seq}`).join(",")],
    queryFn: () => fetchWholeRollouts(runId, wanted),
    enabled: !allWhole && wanted.length > 0,
    staleTime: Infinity,
    retry: 1,
  });
  const data = useMemo(() => {
    if (allWhole) return rollouts.map((r) => r as WholeRollout | undefined);
    if (!query.data) return null;
    let i = 0;
    return rollouts.map((r) => (r === undefined ? undefined : query.data[i++]));
  }, [allWhole, rollouts, query.data]);
  return { data, error: query.error ? query.error.message : null };
}

function useDebounced<T>(value: T, ms: number): T {
  const [debounced, setDebounced] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setDebounced(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return debounced;
}

/**
 * The server's matches for the search text `q` (trimmed, lower-cased) among the stored rollouts the page holds
 * as summaries; asked again when more summaries arrive (the first load still going). `searching` while unanswered.
 */
export function useServerTextMatches(runId: string, q: string, rollouts: readonly Rollout[]): { matches: TextMatches | null; searching: boolean } {
  // The newest seq the page holds only a summary of: the server must have searched at least that far.
  const summaryThrough = useMemo(() => rollouts.reduce((m, r) => (isWholeRollout(r) ? m : Math.max(m, r.seq)), 0), [rollouts]);
  const text = useDebounced(q, 250);
  const enabled = text !== "" && text === q && summaryThrough > 0;
  const query = useQuery({
    queryKey: ["run-view", "rollout-search", runId, text, summaryThrough],
    queryFn: async (): Promise<TextMatches> => {
      const found = await getJson<{ seqs: number[]; through: number }>(`${rolloutsUrl(runId)}?q=${encodeURIComponent(text)}`);
      return { text, seqs: new Set(found.seqs) };
    },
    enabled,
    staleTime: Infinity,
    // While more summaries are being searched, the last answer for the same text still holds for the older ones.
    placeholderData: keepPreviousData,
  });
  const matches = query.data && query.data.text === q ? query.data : null;
  return { matches, searching: q !== "" && summaryThrough > 0 && (!matches || query.isFetching) };
}
