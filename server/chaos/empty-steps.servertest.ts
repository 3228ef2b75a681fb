/**
 * Chaos, finding 6 of issue 17: on an overloaded runner a train run trained empty steps at 100% exceptions
 * to the end, saving checkpoints of nothing. A train run whose every rollout fails (here its scenario
 * throws, as a rollout timing out on a crowded engine does), on the real runner and its real engine, stops
 * itself at limits.fail_after_empty_steps empty steps in a row, as failed, with the reason and the most
 * frequent error, before it trains or checkpoints that step (not 8 steps of checkpoints of nothing).
 *   npx vitest run --project server server/chaos/empty-steps.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestRunner, type TestRunner } from "@/gpu-runner/src/test-support/test-runner";
import { collectRunEvents } from "../test/collect-run-events";
import { templateFiles } from "../test/harness";

const TOKEN = "empty-steps-token-0123456789abcdef";
let runner: TestRunner;

beforeAll(async () => {
  runner = await startTestRunner({ name: "empty-steps", token: TOKEN, engine: "shared" });
}, 600_000);
afterAll(async () => {
  await runner?.close();
}, 60_000);

const throwing = `import type { RolloutContext } from "rollbook";
export interface Task { word: string }
export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  throw new Error("the engine is overloaded (simulated)");
}
`;

describe("a train run with nothing to learn from", () => {
  it("stops itself at the second empty step, as failed with the reason, before training or checkpointing it", async () => {
    const files = { ...templateFiles({ num_steps: 8, groups_per_step: 2, rollouts_per_group: 2, eval_every: 0 }), "scenario.ts": throwing };
    const started = await runner.client.start.mutate({ run_id: "empty-1", workspace_id: "ws", kind: "train", files, resume: false });
    expect(started).toMatchObject({ ok: true });
    const events = await collectRunEvents(runner.server.url, TOKEN, "empty-1");
    const end = events.at(-1);
    expect(end).toMatchObject({ type: "run.finished", payload: { status: "failed" } });
    if (end?.type !== "run.finished") return;
    expect(end.payload.error).toBe(
      "steps 1–2 had nothing to train on: no group with two valid rollouts of different rewards, and 100% of step 2's 4 rollouts failed " +
        "(most often, 4×: thrown: the engine is overloaded (simulated)). Stopped before training on nothing (limits.fail_after_empty_steps 2); fix the cause and Resume.",
    );
    expect(events.filter((e) => e.type === "step.finished").map((e) => e.type === "step.finished" && e.payload.step)).toEqual([1, 2]);
    // Step 1 alone is not yet a pattern (it trains, on nothing); step 2 makes two and is neither trained nor saved.
    expect(events.flatMap((e) => (e.type === "checkpoint.saved" ? [e.payload.step] : []))).toEqual([1]);
    expect(events.filter((e) => e.type === "rollout.finished")).toHaveLength(8);
  }, 300_000);
});
