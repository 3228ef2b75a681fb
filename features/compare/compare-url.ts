/**
 * The compare page's address and limits. Pure (no React, no server code): the page, the buttons that open
 * it and the API's input check (features/compare/server/router.ts) all import the limits from here.
 */
export const COMPARE_MIN_RUNS = 2;
export const COMPARE_MAX_RUNS = 8;

/** `/compare?runs=a,b&baseline=a` */
export function compareHref(runIds: readonly string[], baselineRunId?: string): string {
  const q = new URLSearchParams({ runs: runIds.join(",") });
  if (baselineRunId) q.set("baseline", baselineRunId);
  // Commas are legal in a query and keep the address readable.
  return `/compare?${q.toString().replace(/%2C/gi, ",")}`;
}

/** The page's query back to run ids (deduplicated, empty parts dropped) and a baseline among them. */
export function parseCompareQuery(runs: string | undefined, baseline: string | undefined): { runIds: string[]; baselineRunId: string | null } {
  const runIds = [...new Set((runs ?? "").split(",").map((s) => s.trim()).filter(Boolean))];
  const baselineRunId = baseline && runIds.includes(baseline) ? baseline : (runIds[0] ?? null);
  return { runIds, baselineRunId };
}
