"use client";
/** The experiment's recent runs beside the editor, polled faster while one is active. */
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { ACTIVE_RUN_STATUSES } from "@contracts";
import { useTRPC } from "@/components/trpc";
import { fmtAgo, fmtNum } from "@/components/ui/format";
import { KindBadge, Spinner, StatusBadge } from "@/components/ui/primitives";

const ACTIVE_STATUSES = new Set<string>(ACTIVE_RUN_STATUSES);

export function RecentRuns({ experimentId }: { experimentId: string }) {
  const trpc = useTRPC();
  const runs = useQuery(
    trpc.runs.list.queryOptions(
      { experimentId, limit: 15 },
      { refetchInterval: (q) => (q.state.data?.items.some((r) => ACTIVE_STATUSES.has(r.status)) ? 2_000 : 15_000) },
    ),
  );
  return (
    <aside className="hidden w-72 shrink-0 flex-col border-l border-zinc-800 lg:flex">
      <div className="flex h-11 shrink-0 items-center justify-between border-b border-zinc-800 px-3">
        <span className="text-[11px] tracking-wide text-zinc-500 uppercase">Recent runs</span>
        <Link href={`/runs?experiment=${experimentId}`} className="text-[12px] text-zinc-400 hover:text-zinc-200">
          all →
        </Link>
      </div>
      <div className="min-h-0 flex-1 overflow-auto">
        {runs.error ? (
          <div className="p-3 text-[12px] text-red-300">{runs.error.message}</div>
        ) : !runs.data ? (
          <div className="p-3">
            <Spinner />
          </div>
        ) : runs.data.items.length === 0 ? (
          <div className="p-3 text-[12px] text-zinc-500">No runs yet. Try a dry run: one step of rollouts, no training.</div>
        ) : (
          <ul className="divide-y divide-zinc-800/70">
            {runs.data.items.map((r) => (
              <li key={r.id}>
                <Link href={`/runs/${r.id}`} className="flex flex-col gap-1 px-3 py-2 hover:bg-zinc-900">
                  <div className="flex items-center gap-2">
                    <span className="font-mono text-zinc-300">#{r.number}</span>
                    <KindBadge kind={r.kind} />
                    <span className="ml-auto">
                      <StatusBadge status={r.status} />
                    </span>
                  </div>
                  <div className="flex gap-3 text-[11px] text-zinc-500">
                    <span>reward {fmtNum(r.rewardMean)}</span>
                    <span>{r.rolloutCount} rollouts</span>
                    <span className="ml-auto">{fmtAgo(r.createdAt)}</span>
                  </div>
                </Link>
              </li>
            ))}
          </ul>
        )}
      </div>
    </aside>
  );
}
