"use client";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "./trpc";
import { fmtAgo } from "./ui/format";
import { EmptyState, ErrorBox, Spinner } from "./ui/primitives";

export function ExperimentsList() {
  const trpc = useTRPC();
  const list = useQuery(trpc.experiments.list.queryOptions());
  return (
    <div className="mx-auto w-full max-w-6xl p-6">
      <div className="mb-4 flex items-center gap-3">
        <h1 className="text-lg font-semibold text-zinc-100">Experiments</h1>
        <span className="text-[12px] text-zinc-500">{list.data ? `${list.data.length} total` : ""}</span>
        <Link
          href="/experiments/new"
          className="ml-auto inline-flex h-7 items-center rounded bg-amber-400 px-2.5 text-[13px] font-medium text-zinc-950 hover:bg-amber-300"
        >
          New experiment
        </Link>
      </div>
      {list.error ? (
        <ErrorBox title="Could not load experiments">{list.error.message}</ErrorBox>
      ) : !list.data ? (
        <Spinner />
      ) : list.data.length === 0 ? (
        <EmptyState title="No experiments yet">
          <Link href="/experiments/new" className="underline">
            Create one from a template
          </Link>
          , or open Rollbook&apos;s home page for the default one.
        </EmptyState>
      ) : (
        <div className="overflow-hidden rounded border border-zinc-800">
          <table className="w-full text-left">
            <thead className="bg-zinc-900 text-[11px] tracking-wide text-zinc-500 uppercase">
              <tr>
                <th className="px-3 py-2 font-medium">Name</th>
                <th className="px-3 py-2 font-medium">Description</th>
                <th className="px-3 py-2 text-right font-medium">Version</th>
                <th className="px-3 py-2 text-right font-medium">Runs</th>
                <th className="px-3 py-2 text-right font-medium">Updated</th>
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-800/80">
              {list.data.map((e) => (
                <tr key={e.id} className="hover:bg-zinc-900/70">
                  <td className="px-3 py-2">
                    <Link href={`/experiments/${e.id}`} className="font-medium text-amber-300 hover:underline">
                      {e.name}
                    </Link>
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
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
