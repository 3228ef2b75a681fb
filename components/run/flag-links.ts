/**
 * A pathology flag's link to what raised it, and reading it back: `/runs/<id>?tab=rollouts&flag=<flag>&
 * steps=7,8&rollouts=a,b`. The run page filters its rollouts to those ids, or, for flags on trainer
 * metrics (no rollout ids), to those steps' train rollouts. Pure: the browser and unit tests import it.
 */
import type { RunFlagMessage } from "@/server/realtime/socket-events";

type FlagLink = Pick<RunFlagMessage, "id" | "steps" | "rolloutIds">;

export function flagHref(runId: string, f: FlagLink): string {
  const p = new URLSearchParams({ tab: "rollouts", flag: f.id, steps: f.steps.join(",") });
  if (f.rolloutIds.length) p.set("rollouts", f.rolloutIds.join(","));
  return `/runs/${runId}?${p.toString().replaceAll("%2C", ",")}`;
}

/** What a flag link asks the run page to show (null: no flag link in the address). */
export interface FlagFocus {
  flagId: string | null;
  steps: number[];
  rolloutIds: string[];
}

export function flagFocusFromSearch(search: URLSearchParams): FlagFocus | null {
  const steps = (search.get("steps") ?? "").split(",").filter(Boolean).map(Number).filter((n) => Number.isInteger(n) && n >= 0);
  const rolloutIds = (search.get("rollouts") ?? "").split(",").filter(Boolean);
  if (!steps.length && !rolloutIds.length) return null;
  return { flagId: search.get("flag"), steps, rolloutIds };
}

/** Whether a rollout is among what the flag link names: its ids, else its steps' train rollouts. */
export function inFlagFocus(focus: FlagFocus, r: { id: string; step: number; split: string }): boolean {
  if (focus.rolloutIds.length) return focus.rolloutIds.includes(r.id);
  return r.split === "train" && focus.steps.includes(r.step);
}

