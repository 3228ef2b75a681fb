"use client";
/**
 * The runs page's filters and sort live in the address (?status=failed&tag=baseline&sort=m:eval_reward…),
 * so a filtered view is a link to share and survives a refresh; the mapping is the server's own
 * (runs-table-query.ts), so the CSV export of a view returns exactly its rows.
 */
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { useCallback, useMemo } from "react";
import { viewFromSearchParams, viewToSearchParams, type RunsView } from "@/features/runs/runs-table-query";

export function useRunsView(): { view: RunsView; query: string; setView: (patch: Partial<RunsView>) => void; clear: () => void } {
  const params = useSearchParams();
  const router = useRouter();
  const pathname = usePathname();
  const view = useMemo(() => viewFromSearchParams(new URLSearchParams(params.toString())), [params]);
  const query = viewToSearchParams(view).toString();
  const go = useCallback(
    (next: RunsView) => {
      const q = viewToSearchParams(next).toString();
      // replace, not push: typing in the search box must not leave one history entry per letter.
      router.replace(q ? `${pathname}?${q}` : pathname, { scroll: false });
    },
    [router, pathname],
  );
  const setView = useCallback(
    (patch: Partial<RunsView>) => {
      const next: RunsView = { ...view, ...patch };
      for (const [k, v] of Object.entries(patch)) if (v === undefined || v === "" || (Array.isArray(v) && v.length === 0)) delete next[k as keyof RunsView];
      go(next);
    },
    [view, go],
  );
  const clear = useCallback(() => go(view.experimentId ? { experimentId: view.experimentId } : {}), [view.experimentId, go]);
  return { view, query, setView, clear };
}

/** A local calendar day (YYYY-MM-DD, as <input type=date> gives it) ↔ the instant the filter holds. */
export function dayStart(day: string): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return undefined;
  const [y, m, d] = day.split("-").map(Number) as [number, number, number];
  return new Date(y, m - 1, d).toISOString();
}

/** The end of a local day as the filter's exclusive bound: the start of the next one. */
export function dayEnd(day: string): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return undefined;
  const [y, m, d] = day.split("-").map(Number) as [number, number, number];
  return new Date(y, m - 1, d + 1).toISOString();
}

/** The local day an instant falls on (for `from`) or, for an exclusive `to`, the day before it. */
export function dayOf(iso: string | undefined, exclusiveEnd = false): string {
  if (!iso) return "";
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return "";
  if (exclusiveEnd) t.setMilliseconds(t.getMilliseconds() - 1);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${t.getFullYear()}-${pad(t.getMonth() + 1)}-${pad(t.getDate())}`;
}
