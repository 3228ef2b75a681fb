"use client";
/**
 * The workspace's experiments: open, rename, duplicate, archive and delete them (the "⋯" menu); archived
 * ones are hidden unless "Show archived" is on (their runs stay in the runs table either way).
 */
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { ExperimentMenu } from "./experiment-actions";
import { usePermission } from "@/components/auth/use-role";
import { useTRPC } from "@/components/trpc";
import { fmtAgo } from "@/components/ui/format";
import { EmptyState, ErrorBox, Spinner } from "@/components/ui/primitives";

export function ExperimentsList() {
  const trpc = useTRPC();
  const [showArchived, setShowArchived] = useState(false);
  const list = useQuery(trpc.experiments.list.queryOptions({ includeArchived: showArchived }));
  const create = usePermission("experiment.create");
  return (
    <div className="mx-auto w-full max-w-6xl p-6">
      <div className="mb-4 flex items-center gap-3">
        <h1 className="text-lg font-semibold text-zinc-100">Experiments</h1>
        <span className="text-[12px] text-zinc-500">{list.data ? `${list.data.length} ${showArchived ? "including archived" : "total"}` : ""}</span>
        <label className="ml-auto flex items-center gap-1.5 text-[12px] text-zinc-400">
          <input type="checkbox" checked={showArchived} onChange={(e) => setShowArchived(e.target.checked)} className="accent-amber-400" />
          Show archived
        </label>
        {create.allowed ? (
          <Link
            href="/experiments/new"
            className="inline-flex h-7 items-center rounded bg-amber-400 px-2.5 text-[13px] font-medium text-zinc-950 hover:bg-amber-300"
          >
            New experiment
          </Link>
        ) : (
          <span aria-disabled="true" title={create.title} className="inline-flex h-7 cursor-not-allowed items-center rounded bg-zinc-800 px-2.5 text-[13px] font-medium text-zinc-500">
            New experiment
          </span>
        )}
      </div>
      {list.error ? (
        <ErrorBox title="Could not load experiments">{list.error.message}</ErrorBox>
      ) : !list.data ? (
        <Spinner />
      ) : list.data.length === 0 ? (
        <EmptyState title={showArchived ? "No experiments yet" : "No experiments to show"}>
          {!showArchived && <>Archived experiments are hidden: turn on &quot;Show archived&quot; to see them. </>}
          {create.allowed && (
            <>
              <Link href="/experiments/new" className="underline">
                Create one from a template
              </Link>
              , or open
            </>
          )}
          {!create.allowed && "Open"} Rollbook&apos;s home page for the default one.
        </EmptyState>
      ) : (
        // No overflow clipping: a row's "⋯" menu opens below the table's edge.
        <div className="rounded border border-zinc-800">
          <table className="w-full text-left">
            <thead className="bg-zinc-900 text-[11px] tracking-wide text-zinc-500 uppercase">
              <tr>
                <th className="px-3 py-2 font-medium">Name</th>
                <th className="px-3 py-2 font-medium">Description</th>
                <th className="px-3 py-2 text-right font-medium">Version</th>
                <th className="px-3 py-2 text-right font-medium">Runs</th>
                <th className="px-3 py-2 text-right font-medium">Updated</th>
                <th className="w-10 px-3 py-2">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-800/80">
              {list.data.map((e) => (
                <tr key={e.id} className={`hover:bg-zinc-900/70 ${e.archivedAt ? "opacity-70" : ""}`} data-testid="experiment-row">
                  <td className="px-3 py-2">
                    <Link href={`/experiments/${e.id}`} className="font-medium text-amber-300 hover:underline">
                      {e.name}
                    </Link>
                    {e.archivedAt && <span className="ml-2 rounded border border-zinc-700 px-1.5 text-[11px] text-zinc-400">archived</span>}
                  </td>
                  <td className="max-w-md truncate px-3 py-2 text-zinc-400" title={e.description ?? undefined}>
                    {e.description || "—"}
                  </td>
                  <td className="px-3 py-2 text-right font-mono tabular-nums">v{e.latestVersionNumber}</td>
                  <td className="px-3 py-2 text-right font-mono tabular-nums">
                    <Link href={`/runs?experiment=${e.id}`} className="hover:underline">
                      {e.runCount}
                    </Link>
                  </td>
                  <td className="px-3 py-2 text-right text-zinc-400">{fmtAgo(e.updatedAt)}</td>
                  <td className="px-3 py-2 text-right">
                    <ExperimentMenu experiment={e} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
