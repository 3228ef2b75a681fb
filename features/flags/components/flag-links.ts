/**
 * A pathology flag's link to what raised it: `/runs/<id>?tab=rollouts&flag=<flag>&steps=7,8&rollouts=a,b`.
 * The run page's rollout filter (rollout-filter.ts) reads it back: those ids, or, for flags on trainer
 * metrics (no rollout ids), those steps' train rollouts. Pure: the browser and unit tests import it.
 */
import type { RunFlagMessage } from "@/contracts/socket-events";

type FlagLink = Pick<RunFlagMessage, "id" | "steps" | "rolloutIds">;

export function flagHref(runId: string, f: FlagLink): string {
  const p = new URLSearchParams({ tab: "rollouts", flag: f.id, steps: f.steps.join(",") });
  if (f.rolloutIds.length) p.set("rollouts", f.rolloutIds.join(","));
  return `/runs/${runId}?${p.toString().replaceAll("%2C", ",")}`;
}

/** What a flag names: the run page's rollout filter shows those rollouts, or those steps' train rollouts. */
export interface FlagFocus {
  flagId: string | null;
  steps: number[];
  rolloutIds: string[];
}
