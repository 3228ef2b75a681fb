/**
 * A flag's link round-trips to the run page's rollout filter.
 *   npx vitest run --project unit features/flags/components/flag-links.test.ts
 */
import { describe, expect, it } from "vitest";
import { flagHref } from "./flag-links";
import { filterFromParams, matchesFilter } from "@/features/run-view";
import type { Rollout } from "@/features/run-view";

const r = (id: string, step: number, split: "train" | "val") => ({ id, step, split, reward: 0, error: null, messages: [], task: {}, metrics: {} }) as unknown as Rollout;
const filterOf = (href: string) => filterFromParams(new URL(href, "http://x").searchParams);

describe("flag links", () => {
  it("names the flag's steps and rollouts, and the run page's filter selects exactly those rollouts", () => {
    const href = flagHref("run1", { id: "f1", steps: [7, 8], rolloutIds: ["t7-0-1", "t8-2-3"] });
    expect(href).toBe("/runs/run1?tab=rollouts&flag=f1&steps=7,8&rollouts=t7-0-1,t8-2-3");
    const f = filterOf(href);
    expect(matchesFilter(r("t7-0-1", 7, "train"), f)).toBe(true);
    expect(matchesFilter(r("t7-0-2", 7, "train"), f)).toBe(false);
  });

  it("without rollout ids (trainer metrics), the steps' train rollouts", () => {
    const f = filterOf(flagHref("run1", { id: "f2", steps: [3], rolloutIds: [] }));
    expect(matchesFilter(r("a", 3, "train"), f)).toBe(true);
    expect(matchesFilter(r("b", 3, "val"), f)).toBe(false);
    expect(matchesFilter(r("c", 4, "train"), f)).toBe(false);
  });
});
