/**
 * A flag's link round-trips to the run page's rollout filter.
 *   npx vitest run --project unit components/run/flag-links.test.ts
 */
import { describe, expect, it } from "vitest";
import { flagFocusFromSearch, flagHref, inFlagFocus } from "./flag-links";

describe("flag links", () => {
  it("names the flag's steps and rollouts, and the run page reads them back", () => {
    const href = flagHref("run1", { id: "f1", steps: [7, 8], rolloutIds: ["t7-0-1", "t8-2-3"] });
    expect(href).toBe("/runs/run1?tab=rollouts&flag=f1&steps=7,8&rollouts=t7-0-1,t8-2-3");
    const focus = flagFocusFromSearch(new URL(href, "http://x").searchParams)!;
    expect(focus).toEqual({ flagId: "f1", steps: [7, 8], rolloutIds: ["t7-0-1", "t8-2-3"] });
    expect(inFlagFocus(focus, { id: "t7-0-1", step: 7, split: "train" })).toBe(true);
    expect(inFlagFocus(focus, { id: "t7-0-2", step: 7, split: "train" })).toBe(false);
  });

  it("without rollout ids (trainer metrics), the steps' train rollouts; no params: no focus", () => {
    const focus = flagFocusFromSearch(new URLSearchParams("steps=3,x,-1"))!;
    expect(focus.steps).toEqual([3]);
    expect(inFlagFocus(focus, { id: "a", step: 3, split: "train" })).toBe(true);
    expect(inFlagFocus(focus, { id: "b", step: 3, split: "val" })).toBe(false);
    expect(inFlagFocus(focus, { id: "c", step: 4, split: "train" })).toBe(false);
    expect(flagFocusFromSearch(new URLSearchParams("tab=rollouts"))).toBeNull();
  });
});
