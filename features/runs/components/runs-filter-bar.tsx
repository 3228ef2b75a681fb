"use client";
/**
 * The runs page's filter bar: search, status and kind toggles, author / tag / base model pickers (the
 * workspace's own values, from runs.facets), a date range, the sort, and the CSV export of exactly this view.
 * Every change rewrites the address (use-runs-view.ts); nothing is kept only in component state.
 */
import { useQuery } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { RUN_KINDS, RUN_STATUSES, type RunsSort, type RunsView } from "@/features/runs/runs-table-query";
import { useTRPC } from "@/components/trpc";
import { Button, kindLabel } from "@/components/ui/primitives";
import { dayEnd, dayOf, dayStart } from "./use-runs-view";

const SEARCH_DELAY_MS = 250;

const SORT_LABELS: Record<string, string> = { createdAt: "Created", number: "Run #", rewardMean: "Mean reward (all rollouts)" };

export function sortLabel(sort: RunsSort): string {
  return SORT_LABELS[sort] ?? sort.slice(2);
}

function Toggle({ on, onClick, children, testId }: { on: boolean; onClick: () => void; children: React.ReactNode; testId?: string }) {
  return (
    <button
      type="button"
      data-testid={testId}
      aria-pressed={on}
      onClick={onClick}
      className={`h-7 rounded px-2 text-[12px] ring-1 ring-inset ${
        on ? "bg-amber-400/15 text-amber-200 ring-amber-500/60" : "text-zinc-400 ring-zinc-700 hover:bg-zinc-800 hover:text-zinc-200"
      }`}
    >
      {children}
    </button>
  );
}

const selectClass = "h-7 max-w-48 rounded border border-zinc-700 bg-zinc-900 px-1.5 text-[12px] text-zinc-200";

/** The search box: typed text goes to the address after a short pause (and at once on Enter). */
function SearchBox({ q, onSearch }: { q: string; onSearch: (q: string) => void }) {
  const [text, setText] = useState(q);
  const [lastQ, setLastQ] = useState(q);
  const [sent, setSent] = useState(q);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  // The address changed from elsewhere (Clear, back button): show it, unless it is what we just sent.
  if (q !== lastQ) {
    setLastQ(q);
    if (q !== sent) setText(q);
  }
  const send = (value: string) => {
    if (timer.current) clearTimeout(timer.current);
    timer.current = null;
    setSent(value.trim());
    onSearch(value.trim());
  };
  return (
    <input
      type="search"
      data-testid="runs-search"
      value={text}
      placeholder="Search names, tags, notes, #12…"
      aria-label="Search runs"
      onChange={(e) => {
        const value = e.target.value;
        setText(value);
        if (timer.current) clearTimeout(timer.current);
        timer.current = setTimeout(() => send(value), SEARCH_DELAY_MS);
      }}
      onKeyDown={(e) => {
        if (e.key === "Enter") send(text);
        if (e.key === "Escape") (e.target as HTMLInputElement).blur();
      }}
      className="h-7 w-64 rounded border border-zinc-700 bg-zinc-900 px-2 text-[12px] text-zinc-100 placeholder:text-zinc-500"
    />
  );
}

export function RunsFilterBar({
  view,
  query,
  setView,
  clear,
}: {
  view: RunsView;
  query: string;
  setView: (patch: Partial<RunsView>) => void;
  clear: () => void;
}) {
  const trpc = useTRPC();
  const facets = useQuery(trpc.runs.facets.queryOptions(undefined, { staleTime: 30_000 }));
  const toggle = <T extends string>(list: T[] | undefined, v: T): T[] => (list?.includes(v) ? list.filter((x) => x !== v) : [...(list ?? []), v]);
  const sort = view.sort ?? "createdAt";
  const sorts: RunsSort[] = ["createdAt", "number", "rewardMean", ...(facets.data?.metrics ?? []).map((m) => `m:${m}` as const)];
  if (!sorts.includes(sort)) sorts.push(sort);
  const filtered = Object.keys(view).some((k) => !["experimentId", "sort", "dir"].includes(k));

  return (
    <div className="mb-3 flex flex-col gap-2" data-testid="runs-filter-bar">
      <div className="flex flex-wrap items-center gap-2">
        <SearchBox q={view.q ?? ""} onSearch={(q) => setView({ q: q || undefined })} />
        <div className="flex items-center gap-1" role="group" aria-label="Status">
          {RUN_STATUSES.map((s) => (
            <Toggle key={s} testId={`filter-status-${s}`} on={view.status?.includes(s) ?? false} onClick={() => setView({ status: toggle(view.status, s) })}>
              {s}
            </Toggle>
          ))}
        </div>
        <div className="flex items-center gap-1" role="group" aria-label="Kind">
          {RUN_KINDS.map((k) => (
            <Toggle key={k} testId={`filter-kind-${k}`} on={view.kind?.includes(k) ?? false} onClick={() => setView({ kind: toggle(view.kind, k) })}>
              {kindLabel(k)}
            </Toggle>
          ))}
        </div>
        <Toggle testId="filter-flagged" on={view.flagged ?? false} onClick={() => setView({ flagged: view.flagged ? undefined : true })}>
          ⚑ flagged
        </Toggle>
      </div>
      <div className="flex flex-wrap items-center gap-2 text-[12px] text-zinc-400">
        <select aria-label="Author" className={selectClass} value={view.authorId ?? ""} onChange={(e) => setView({ authorId: e.target.value || undefined })}>
          <option value="">Any author</option>
          {facets.data?.authors.map((a) => (
            <option key={a.id} value={a.id}>
              {a.name || a.email}
            </option>
          ))}
        </select>
        <select aria-label="Tag" data-testid="filter-tag" className={selectClass} value={view.tag ?? ""} onChange={(e) => setView({ tag: e.target.value || undefined })}>
          <option value="">Any tag</option>
          {[...new Set([...(facets.data?.tags ?? []), ...(view.tag ? [view.tag] : [])])].map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
        <select aria-label="Base model" className={selectClass} value={view.baseModel ?? ""} onChange={(e) => setView({ baseModel: e.target.value || undefined })}>
          <option value="">Any base model</option>
          {[...new Set([...(facets.data?.baseModels ?? []), ...(view.baseModel ? [view.baseModel] : [])])].map((m) => (
            <option key={m} value={m}>
              {m}
            </option>
          ))}
        </select>
        <label className="flex items-center gap-1">
          from
          <input type="date" aria-label="Created from" className={selectClass} value={dayOf(view.from)} onChange={(e) => setView({ from: dayStart(e.target.value) })} />
        </label>
        <label className="flex items-center gap-1">
          to
          <input type="date" aria-label="Created to" className={selectClass} value={dayOf(view.to, true)} onChange={(e) => setView({ to: dayEnd(e.target.value) })} />
        </label>
        <span className="ml-2 flex items-center gap-1">
          sort
          <select
            aria-label="Sort by"
            data-testid="runs-sort"
            className={selectClass}
            value={sort}
            onChange={(e) => setView({ sort: e.target.value === "createdAt" ? undefined : (e.target.value as RunsSort) })}
          >
            {sorts.map((s) => (
              <option key={s} value={s}>
                {sortLabel(s)}
              </option>
            ))}
          </select>
          <Button
            variant="ghost"
            aria-label={view.dir === "asc" ? "Ascending (click for descending)" : "Descending (click for ascending)"}
            onClick={() => setView({ dir: view.dir === "asc" ? undefined : "asc" })}
          >
            {view.dir === "asc" ? "↑ asc" : "↓ desc"}
          </Button>
        </span>
        <span className="ml-auto flex items-center gap-2">
          {filtered && (
            <Button variant="ghost" onClick={clear}>
              Clear filters
            </Button>
          )}
          <a
            href={`/api/export/runs${query ? `?${query}` : ""}`}
            download
            data-testid="export-runs-csv"
            className="inline-flex h-7 items-center rounded border border-zinc-700 bg-zinc-800 px-2.5 text-[13px] text-zinc-100 hover:bg-zinc-700"
            title="Every run of this view, with its filters and order, as CSV"
          >
            Export CSV
          </a>
        </span>
      </div>
    </div>
  );
}
