"use client";
/**
 * "Compare" for a selection of runs (the runs table's checkboxes): opens /compare with them, the first
 * selected as the baseline. Disabled, with the reason as its title, outside 2–8 runs.
 */
import { useRouter } from "next/navigation";
import { Button } from "@/components/ui/primitives";
import { COMPARE_MAX_RUNS as COMPARE_MAX, COMPARE_MIN_RUNS as COMPARE_MIN, compareHref } from "../compare-url";

export function CompareButton({ runIds, baselineRunId, className }: { runIds: readonly string[]; baselineRunId?: string; className?: string }) {
  const router = useRouter();
  const n = runIds.length;
  const ok = n >= COMPARE_MIN && n <= COMPARE_MAX;
  const why = n < COMPARE_MIN ? `select at least ${COMPARE_MIN} runs to compare` : n > COMPARE_MAX ? `compare at most ${COMPARE_MAX} runs at a time` : `compare ${n} runs`;
  return (
    <Button
      data-testid="compare-button"
      className={className}
      disabled={!ok}
      title={why}
      onClick={() => router.push(compareHref(runIds, baselineRunId && runIds.includes(baselineRunId) ? baselineRunId : runIds[0]))}
    >
      Compare{n > 0 ? ` (${n})` : ""}
    </Button>
  );
}
