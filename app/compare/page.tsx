import type { Metadata } from "next";
import { CompareView } from "@/features/compare/components/compare-view";
import { parseCompareQuery } from "@/features/compare/compare-url";

export const metadata: Metadata = { title: "Compare runs" };

/** `/compare?runs=a,b,c&baseline=a` */
export default async function ComparePage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { runs, baseline } = await searchParams;
  const { runIds, baselineRunId } = parseCompareQuery(typeof runs === "string" ? runs : undefined, typeof baseline === "string" ? baseline : undefined);
  // Keyed by the selection: a different set of runs is a fresh page (pickers reset), a new baseline is not.
  return <CompareView key={runIds.join(",")} runIds={runIds} baselineRunId={baselineRunId} />;
}
