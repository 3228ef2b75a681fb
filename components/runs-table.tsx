"use client";
/** All runs, newest first, refreshing every 2 s while any of them is queued or running. */
import { useInfiniteQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useTRPC } from "./trpc";
import { fmtAgo, fmtDateTime, fmtInt, fmtNum, truncate } from "./ui/format";
import { Button, EmptyState, ErrorBox, KindBadge, Spinner, StatusBadge } from "./ui/primitives";

const ACTIVE = new Set(["queued", "running"]);

export function RunsTable({ experimentId }: { experimentId?: string }) {
  const trpc = useTRPC();
  const router = useRouter();
  const runs = useInfiniteQuery(
    trpc.runs.list.infiniteQueryOptions(
      { experimentId, limit: 50 },
      {
        getNextPageParam: (last) => last.nextCursor ?? undefined,
        refetchInterval: (q) =>
          q.state.data?.pages.some((p) => p.items.some((r) => ACTIVE.has(r.status))) ? 2_000 : 20_000,
      },
    ),
  );
  const rows = runs.data?.pages.flatMap((p) => p.items) ?? [];
  const filteredName = experimentId ? rows[0]?.experimentName : undefined;

  return (
    <div className="mx-auto w-full max-w-7xl p-6">
      <div className="mb-4 flex items-baseline gap-3">
        <h1 className="text-lg font-semibold text-zinc-100">Runs</h1>
        {experimentId && (
          <span className="text-[12px] text-zinc-400">
            of {filteredName ?? "one experiment"} ·{" "}
            <Link href="/runs" className="underline">
              show all
            </Link>
          </span>
        )}
        {runs.isFetching && runs.data && <span className="ml-auto text-[11px] text-zinc-600">refreshing…</span>}
      </div>
      {runs.error ? (
        <ErrorBox title="Could not load runs">{runs.error.message}</ErrorBox>
      ) : !runs.data ? (
        <Spinner />
      ) : rows.length === 0 ? (
        <EmptyState title="No runs yet">Open an experiment and press Dry run or Train.</EmptyState>
      ) : (
        <div className="overflow-x-auto rounded border border-zinc-800">
          <table className="w-full text-left">
            <thead className="bg-zinc-900 text-[11px] tracking-wide text-zinc-500 uppercase">
              <tr>
                <th className="px-3 py-2 font-medium">Run</th>
                <th className="px-3 py-2 font-medium">Experiment</th>
                <th className="px-3 py-2 font-medium">Kind</th>
                <th className="px-3 py-2 font-medium">Status</th>
                <th className="px-3 py-2 text-right font-medium">Mean reward</th>
                <th className="px-3 py-2 text-right font-medium">Rollouts</th>
                <th className="px-3 py-2 text-right font-medium">Errors</th>
                <th className="px-3 py-2 text-right font-medium">Step</th>
                <th className="px-3 py-2 text-right font-medium">Created</th>
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-800/80">
              {rows.map((r) => (
                <tr
                  key={r.id}
                  data-testid="run-row"
                  className="cursor-pointer hover:bg-zinc-900/70"
                  onClick={(e) => {
                    // Let real links (and modifier clicks) behave as links.
                    if ((e.target as HTMLElement).closest("a") || e.metaKey || e.ctrlKey) return;
                    router.push(`/runs/${r.id}`);
                  }}
                >
                  <td className="px-3 py-2">
                    <Link href={`/runs/${r.id}`} className="font-mono text-amber-300 hover:underline">
                      #{r.number}
                    </Link>
                  </td>
                  <td className="px-3 py-2">
                    <span className="text-zinc-200">{r.experimentName}</span>
                    <span className="ml-1.5 font-mono text-[11px] text-zinc-500">v{r.versionNumber}</span>
                  </td>
                  <td className="px-3 py-2">
                    <KindBadge kind={r.kind} />
                  </td>
                  <td className="px-3 py-2">
                    <div className="flex items-center gap-2">
                      <StatusBadge status={r.status} />
                      {r.status === "failed" && r.error && (
                        <span className="max-w-64 truncate text-[11px] text-red-300/80" title={r.error}>
                          {truncate(r.error, 80)}
                        </span>
                      )}
                    </div>
                  </td>
                  <td className="px-3 py-2 text-right font-mono tabular-nums">{fmtNum(r.rewardMean)}</td>
                  <td className="px-3 py-2 text-right font-mono tabular-nums">{fmtInt(r.rolloutCount)}</td>
                  <td className={`px-3 py-2 text-right font-mono tabular-nums ${r.errorCount > 0 ? "text-red-300" : "text-zinc-500"}`}>
                    {fmtInt(r.errorCount)}
                  </td>
                  <td className="px-3 py-2 text-right font-mono tabular-nums">{r.currentStep ?? "—"}</td>
                  <td className="px-3 py-2 text-right text-zinc-400" title={fmtDateTime(r.createdAt)}>
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
