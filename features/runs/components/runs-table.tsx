"use client";
/**
 * The workspace's runs: filters, sort and search from the address (features/runs/components/use-runs-view.ts),
 * cursor pages ("Load more"), sortable metric columns (Run.summary), inline tags and notes (members and up),
 * and the keyboard: j/k move the selection, Enter (or o) opens it. Refreshes every 2 s while a listed run is
 * queued or running.
 */
import { useInfiniteQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useEffect, useState } from "react";
import { ACTIVE_RUN_STATUSES, MEAN_REWARD_DEFINITION } from "@contracts";
import { SUMMARY_COLUMNS, viewToListInput, type RunsSort } from "@/features/runs/runs-table-query";
import { useCan } from "@/components/auth/use-role";
import { RunFlagsBadge } from "@/features/flags";
import { RunsFilterBar } from "./runs-filter-bar";
import { artIdleBadge } from "@/features/art";
import { useNow } from "@/components/ui/use-now";
import { runName } from "../run-name";
import { RunNotes, RunTags } from "./run-tags-notes";
import { useRunsView } from "./use-runs-view";
import { useTRPC } from "@/components/trpc";
import { fmtAgo, fmtDateTime, fmtInt, fmtNum, ordinal, truncate } from "@/components/ui/format";
import { Button, EmptyState, ErrorBox, KindBadge, Spinner, StatusBadge } from "@/components/ui/primitives";

const ACTIVE = new Set<string>(ACTIVE_RUN_STATUSES);

/** Keys typed into a field, or with a modifier, are not table shortcuts. */
function typing(e: KeyboardEvent): boolean {
  const t = e.target as HTMLElement | null;
  return e.metaKey || e.ctrlKey || e.altKey || !!t?.closest("input, textarea, select, [contenteditable=true], [role=dialog]");
}

export function RunsTable() {
  const trpc = useTRPC();
  const router = useRouter();
  const canEdit = useCan("run.editTagsNotes");
  const { view, query, setView, clear } = useRunsView();
  const runs = useInfiniteQuery(
    trpc.runs.list.infiniteQueryOptions(
      { ...viewToListInput(view), limit: 50 },
      {
        getNextPageParam: (last) => last.nextCursor ?? undefined,
        refetchInterval: (q) => (q.state.data?.pages.some((p) => p.items.some((r) => ACTIVE.has(r.status))) ? 2_000 : 20_000),
      },
    ),
  );
  const rows = runs.data?.pages.flatMap((p) => p.items) ?? [];
  // An ART run's client idle since when (art-idle.ts), re-decided as the clock moves.
  const now = useNow(10_000);
  const filteredName = view.experimentId ? rows[0]?.experimentName : undefined;
  const [selected, setSelected] = useState(-1);
  const [seenQuery, setSeenQuery] = useState(query);
  if (query !== seenQuery) {
    // A new view starts with nothing selected (the old index would point at another run).
    setSeenQuery(query);
    setSelected(-1);
  }
  const sel = Math.min(selected, rows.length - 1);
  const selectedId = sel >= 0 ? rows[sel]?.id : undefined;

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (typing(e) || rows.length === 0) return;
      if (e.key === "j" || e.key === "ArrowDown") {
        e.preventDefault();
        setSelected(Math.min(sel + 1, rows.length - 1));
      } else if (e.key === "k" || e.key === "ArrowUp") {
        e.preventDefault();
        setSelected(Math.max(sel - 1, 0));
      } else if ((e.key === "Enter" || e.key === "o") && selectedId) {
        e.preventDefault();
        router.push(`/runs/${selectedId}`);
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [rows.length, sel, selectedId, router]);

  useEffect(() => {
    if (selectedId) document.querySelector(`[data-run-id="${CSS.escape(selectedId)}"]`)?.scrollIntoView({ block: "nearest" });
  }, [selectedId]);

  const sort = view.sort ?? "createdAt";
  const sortBy = (s: RunsSort) => setView(sort === s ? { dir: view.dir === "asc" ? undefined : "asc" } : { sort: s === "createdAt" ? undefined : s, dir: undefined });
  const sortTh = (s: RunsSort, label: string, right = true, title?: string) => (
    <th key={s} title={title} className={`px-3 py-2 font-medium ${right ? "text-right" : ""}`} aria-sort={sort === s ? (view.dir === "asc" ? "ascending" : "descending") : undefined}>
      <button type="button" className={`uppercase hover:text-zinc-200 ${sort === s ? "text-amber-300" : ""}`} onClick={() => sortBy(s)}>
        {label}
        {sort === s ? (view.dir === "asc" ? " ↑" : " ↓") : ""}
      </button>
    </th>
  );

  return (
    <div className="mx-auto w-full max-w-[96rem] p-6">
      <div className="mb-3 flex items-baseline gap-3">
        <h1 className="text-lg font-semibold text-zinc-100">Runs</h1>
        {view.experimentId && (
          <span className="text-[12px] text-zinc-400">
            of {filteredName ?? "one experiment"} ·{" "}
            <button type="button" className="underline" onClick={() => setView({ experimentId: undefined })}>
              show all
            </button>
          </span>
        )}
        <span className="text-[11px] text-zinc-600">
          j/k to move · Enter to open · <kbd className="font-mono">⌘K</kbd> to jump
        </span>
        {runs.isFetching && runs.data && <span className="ml-auto text-[11px] text-zinc-600">refreshing…</span>}
      </div>
      <RunsFilterBar view={view} query={query} setView={setView} clear={clear} />
      {runs.error ? (
        <ErrorBox title="Could not load runs">{runs.error.message}</ErrorBox>
      ) : !runs.data ? (
        <Spinner />
      ) : rows.length === 0 ? (
        query && query !== (view.experimentId ? `experiment=${encodeURIComponent(view.experimentId)}` : "") ? (
          <EmptyState title="No runs match">Change or clear the filters.</EmptyState>
        ) : (
          <EmptyState title="No runs yet">Open an experiment and press Dry run or Train.</EmptyState>
        )
      ) : (
        <div className="overflow-x-auto rounded border border-zinc-800">
          <table className="w-full text-left">
            <thead className="bg-zinc-900 text-[11px] tracking-wide text-zinc-500 uppercase">
              <tr>
                {sortTh("number", "Run", false)}
                <th className="px-3 py-2 font-medium">Experiment</th>
                <th className="px-3 py-2 font-medium">Kind</th>
                <th className="px-3 py-2 font-medium">Status</th>
                <th className="px-3 py-2 font-medium">Flags</th>
                <th className="px-3 py-2 font-medium">Tags · notes</th>
                {sortTh("rewardMean", "Mean reward", true, MEAN_REWARD_DEFINITION)}
                {SUMMARY_COLUMNS.map((c) => sortTh(`m:${c.key}`, c.label))}
                {sort.startsWith("m:") && !SUMMARY_COLUMNS.some((c) => `m:${c.key}` === sort) && sortTh(sort, sort.slice(2))}
                <th className="px-3 py-2 text-right font-medium">Rollouts</th>
                <th className="px-3 py-2 text-right font-medium">Step</th>
                <th className="px-3 py-2 font-medium">Author</th>
                {sortTh("createdAt", "Created")}
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-800/80">
              {rows.map((r, i) => (
                <tr
                  key={r.id}
                  data-testid="run-row"
                  data-run-id={r.id}
                  aria-selected={i === sel}
                  className={`cursor-pointer ${i === sel ? "bg-amber-400/10 outline outline-1 -outline-offset-1 outline-amber-500/50" : "hover:bg-zinc-900/70"}`}
                  onClick={(e) => {
                    // Links, modifier clicks and the inline editors keep their own behaviour.
                    if ((e.target as HTMLElement).closest("a, button, input, textarea, [data-no-row-click]") || e.metaKey || e.ctrlKey) return;
                    router.push(`/runs/${r.id}`);
                  }}
                >
                  <td className="px-3 py-2">
                    <Link href={`/runs/${r.id}`} className="font-mono text-amber-300 hover:underline">
                      #{r.number}
                    </Link>
                  </td>
                  <td className="px-3 py-2">
                    <span className="text-zinc-200" data-testid="run-name">{runName(r).name}</span>
                    <span className="ml-1.5 font-mono text-[11px] text-zinc-500">{runName(r).detail}</span>
                    <div className="max-w-56 truncate font-mono text-[10px] text-zinc-600" title={r.baseModel}>
                      {r.baseModel}
                    </div>
                  </td>
                  <td className="px-3 py-2 whitespace-nowrap">
                    <KindBadge kind={r.kind} />
                  </td>
                  <td className="px-3 py-2">
                    <div className="flex items-center gap-2">
                      <StatusBadge status={r.status} kind={r.kind} idle={artIdleBadge(r, now)} />
                      {r.queuePosition !== null && (
                        <span className="text-[11px] whitespace-nowrap text-zinc-400" title="Starts when a runner that fits it has room (Settings → Runners)">
                          {ordinal(r.queuePosition)} in queue
                        </span>
                      )}
                      {r.status === "failed" && r.error && (
                        <span className="max-w-48 truncate text-[11px] text-red-300/80" title={r.error}>
                          {truncate(r.error, 60)}
                        </span>
                      )}
                    </div>
                  </td>
                  <td className="px-3 py-2">
                    <RunFlagsBadge runId={r.id} flags={r.flags} />
                  </td>
                  <td className="px-3 py-2">
                    <div className="flex items-start gap-1.5">
                      <RunTags runId={r.id} tags={r.tags} canEdit={canEdit} />
                      <RunNotes runId={r.id} notes={r.notes} canEdit={canEdit} />
                    </div>
                  </td>
                  <td className="px-3 py-2 text-right font-mono tabular-nums">{fmtNum(r.rewardMean)}</td>
                  {SUMMARY_COLUMNS.map((c) => (
                    <td key={c.key} className="px-3 py-2 text-right font-mono tabular-nums">
                      {fmtNum(r.summary[c.key], c.digits)}
                    </td>
                  ))}
                  {sort.startsWith("m:") && !SUMMARY_COLUMNS.some((c) => `m:${c.key}` === sort) && (
                    <td className="px-3 py-2 text-right font-mono tabular-nums">{fmtNum(r.summary[sort.slice(2)])}</td>
                  )}
                  <td className={`px-3 py-2 text-right font-mono tabular-nums ${r.errorCount > 0 ? "text-red-300" : ""}`} title={`${r.errorCount} failed`}>
                    {fmtInt(r.rolloutCount)}
                  </td>
                  <td className="px-3 py-2 text-right font-mono tabular-nums">{r.currentStep ?? "—"}</td>
                  <td className="max-w-32 truncate px-3 py-2 text-[12px] text-zinc-400" title={r.createdBy?.email}>
                    {r.createdBy?.name ?? "—"}
                  </td>
                  <td className="px-3 py-2 text-right whitespace-nowrap text-zinc-400" title={fmtDateTime(r.createdAt)}>
                    {fmtAgo(r.createdAt)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {runs.hasNextPage && (
        <div className="mt-3 flex justify-center">
          <Button onClick={() => void runs.fetchNextPage()} disabled={runs.isFetchingNextPage}>
            {runs.isFetchingNextPage ? "Loading…" : "Load more"}
          </Button>
        </div>
      )}
    </div>
  );
}
