"use client";
/**
 * The run page's way into the compare view: pick another run of the same experiment and open
 * /compare with both, the picked run as the baseline (what this run is measured against).
 */
import { useQuery } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useTRPC } from "@/components/trpc";
import { kindLabel } from "@/components/ui/primitives";
import { compareHref } from "../compare-url";

export function CompareWith({ runId, experimentId }: { runId: string; experimentId: string }) {
  const trpc = useTRPC();
  const router = useRouter();
  const runs = useQuery(trpc.runs.list.queryOptions({ experimentId, limit: 50 }));
  const others = (runs.data?.items ?? []).filter((r) => r.id !== runId);
  if (others.length === 0) return null;
  return (
    <select
      aria-label="Compare with…"
      data-testid="compare-with"
      value=""
      onChange={(e) => e.target.value && router.push(compareHref([runId, e.target.value], e.target.value))}
      className="h-7 rounded border border-zinc-700 bg-zinc-900 px-1.5 text-[12px] text-zinc-200"
    >
      <option value="">Compare with…</option>
      {others.map((r) => (
        <option key={r.id} value={r.id}>
          #{r.number} · {kindLabel(r.kind)} · {r.status}
        </option>
      ))}
    </select>
  );
}
