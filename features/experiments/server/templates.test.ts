/** The blank experiment is a valid one: it type-checks, bundles, its tasks fit its taskSchema, and it has validation tasks. */
import { describe, expect, it } from "vitest";
import { validateExperiment } from "@/gpu-runner/src/experiment/validate";
import { BLANK_FILES } from "./templates";

describe("the blank experiment", () => {
  it("validates for a train run", async () => {
    const r = await validateExperiment(BLANK_FILES, "train");
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics, null, 2));
    expect(r.tasks.train.length).toBeGreaterThanOrEqual(r.config.groups_per_step);
    expect(r.tasks.val.length).toBeGreaterThan(0);
  });
});
