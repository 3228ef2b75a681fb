"use client";
/**
 * ⌘K / Ctrl+K from any page: jump to a run (searched on the server like the runs table: experiment name,
 * tags, notes, "#12") or an experiment (by name). cmdk handles the list's keyboard (arrows, Enter) and
 * selection; the modal around it is ours rather than cmdk's Dialog, whose Radix dialog wants a title element
 * the palette does not need. Inside the Monaco editor Ctrl+K is left to Monaco (its chords start with it).
 */
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Command } from "cmdk";
import { useRouter } from "next/navigation";
import { useDeferredValue, useEffect, useState } from "react";
import { useTRPC } from "./trpc";
import { fmtAgo } from "./ui/format";
import { KindBadge, StatusBadge } from "./ui/primitives";

const MAX_EXPERIMENTS = 6;

export function CommandPalette() {
  const trpc = useTRPC();
  const router = useRouter();
  const [open, setOpen] = useState(false);
  const [q, setQ] = useState("");
  const search = useDeferredValue(q.trim());

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key.toLowerCase() !== "k" || !(e.metaKey || e.ctrlKey) || e.altKey || e.shiftKey) return;
      if ((e.target as HTMLElement | null)?.closest(".monaco-editor")) return;
      e.preventDefault();
      setOpen((o) => !o);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);

  const runs = useQuery(trpc.runs.list.queryOptions({ q: search || undefined, limit: 8 }, { enabled: open, placeholderData: keepPreviousData }));
  const experiments = useQuery(trpc.experiments.list.queryOptions(undefined, { enabled: open, staleTime: 30_000 }));
  const words = search.toLowerCase().split(/\s+/).filter(Boolean);
  const matchingExperiments = (experiments.data ?? []).filter((e) => words.every((w) => e.name.toLowerCase().includes(w))).slice(0, MAX_EXPERIMENTS);

  const close = () => {
    setOpen(false);
    setQ("");
  };
  const go = (href: string) => {
    close();
    router.push(href);
  };

  return (
    <>
      <button
        type="button"
        onClick={() => setOpen(true)}
        className="hidden items-center gap-2 rounded border border-zinc-700 px-2 py-0.5 text-[12px] text-zinc-500 hover:text-zinc-300 sm:flex"
        aria-label="Jump to a run or experiment"
        data-testid="palette-open"
      >
        Jump to… <kbd className="font-mono text-[11px]">⌘K</kbd>
      </button>
      {open && (
        <div className="fixed inset-0 z-50 flex items-start justify-center bg-black/50 pt-[12vh]" onMouseDown={(e) => e.target === e.currentTarget && close()}>
          <Command
            label="Jump to a run or experiment"
            shouldFilter={false}
            loop
            role="dialog"
            aria-modal="true"
            data-testid="command-palette"
            onKeyDown={(e) => e.key === "Escape" && close()}
            className="w-[36rem] max-w-[92vw] overflow-hidden rounded-lg border border-zinc-700 bg-zinc-900 shadow-2xl"
          >
            <Command.Input
              autoFocus
              value={q}
              onValueChange={setQ}
              placeholder="Run #, experiment, tag or note…"
              className="h-11 w-full border-b border-zinc-800 bg-transparent px-3 text-[14px] text-zinc-100 outline-none placeholder:text-zinc-500"
            />
            <Command.List className="max-h-[60vh] overflow-y-auto p-1.5">
              {runs.error && <div className="px-2 py-3 text-[12px] text-red-300">{runs.error.message}</div>}
              <Command.Empty className="px-2 py-3 text-[12px] text-zinc-500">{runs.isFetching ? "Searching…" : "Nothing matches."}</Command.Empty>
              {matchingExperiments.length > 0 && (
                <Command.Group heading="Experiments" className="text-[11px] text-zinc-500 [&_[cmdk-group-heading]]:px-2 [&_[cmdk-group-heading]]:py-1">
                  {matchingExperiments.map((e) => (
                    <Command.Item
                      key={e.id}
                      value={`experiment:${e.id}`}
                      onSelect={() => go(`/experiments/${e.id}`)}
                      className="flex cursor-pointer items-center gap-2 rounded px-2 py-1.5 text-[13px] text-zinc-200 data-[selected=true]:bg-zinc-800"
                    >
                      <span className="truncate">{e.name}</span>
                      <span className="ml-auto text-[11px] text-zinc-500">
                        {e.runCount} runs · v{e.latestVersionNumber}
                      </span>
                    </Command.Item>
                  ))}
                </Command.Group>
              )}
              {(runs.data?.items.length ?? 0) > 0 && (
                <Command.Group heading={search ? "Runs" : "Recent runs"} className="text-[11px] text-zinc-500 [&_[cmdk-group-heading]]:px-2 [&_[cmdk-group-heading]]:py-1">
                  {runs.data?.items.map((r) => (
                    <Command.Item
                      key={r.id}
                      value={`run:${r.id}`}
                      onSelect={() => go(`/runs/${r.id}`)}
                      className="flex cursor-pointer items-center gap-2 rounded px-2 py-1.5 text-[13px] text-zinc-200 data-[selected=true]:bg-zinc-800"
                    >
                      <span className="font-mono text-amber-300">#{r.number}</span>
                      <span className="truncate">{r.experimentName}</span>
                      <KindBadge kind={r.kind} />
                      <StatusBadge status={r.status} />
                      {r.tags.length > 0 && <span className="truncate text-[11px] text-zinc-500">{r.tags.join(", ")}</span>}
                      <span className="ml-auto shrink-0 text-[11px] text-zinc-500">{fmtAgo(r.createdAt)}</span>
                    </Command.Item>
                  ))}
                </Command.Group>
              )}
            </Command.List>
          </Command>
        </div>
      )}
    </>
  );
}
