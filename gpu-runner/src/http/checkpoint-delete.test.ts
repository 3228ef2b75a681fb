/**
 * The runner's side of deleting a checkpoint, on a real folder: what goes, what is refused.
 *   npx vitest run --project unit gpu-runner/src/http/checkpoint-delete.test.ts
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { completeSteps } from "../loop/shared-checkpoints";
import { CheckpointDeleteRefused, deleteCheckpointFiles } from "./checkpoint-delete";

let root: string;
let runs: string;
let shared: string;
const RUN = "run_abc-1";

function checkpoint(dir: string, step: number): string {
  const d = path.join(dir, RUN, "checkpoints", String(step).padStart(4, "0"));
  fs.mkdirSync(d, { recursive: true });
  for (const f of ["adapter_config.json", "adapter_model.safetensors", "optimizer.pt", "trainer_state.json"]) fs.writeFileSync(path.join(d, f), "x");
  return d;
}

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "ckpt-delete-"));
  runs = path.join(root, "runs");
  shared = path.join(root, "shared");
  for (const s of [1, 2, 3]) checkpoint(runs, s);
  for (const s of [1, 2]) checkpoint(shared, s);
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const refusal = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => (e instanceof CheckpointDeleteRefused ? e.status : e));

describe("deleteCheckpointFiles", () => {
  it("removes the step's folder here and on the share, leaving no temp folder; a step already gone is deleted: false", async () => {
    expect(await deleteCheckpointFiles(runs, shared, RUN, "1")).toEqual({ deleted: true });
    expect(await completeSteps(runs, RUN)).toEqual([2, 3]);
    expect(await completeSteps(shared, RUN)).toEqual([2]);
    expect(fs.readdirSync(path.join(runs, RUN, "checkpoints")).sort()).toEqual(["0002", "0003"]);
    expect(await deleteCheckpointFiles(runs, shared, RUN, "1")).toEqual({ deleted: false });
    expect(await deleteCheckpointFiles(runs, undefined, RUN, "2")).toEqual({ deleted: true });
    expect(await completeSteps(shared, RUN)).toEqual([2]);
  });

  it("never deletes the run's newest checkpoint (409)", async () => {
    expect(await refusal(deleteCheckpointFiles(runs, shared, RUN, "3"))).toBe(409);
    expect(await completeSteps(runs, RUN)).toEqual([1, 2, 3]);
  });

  it("refuses run ids and steps that are not names (400), touching nothing", async () => {
    for (const [run, step] of [["../x", "1"], [RUN, "01"], [RUN, "-1"], [RUN, "../0001"], [RUN, "1 "], ["", "1"], [RUN, "１"]] as const) {
      expect(await refusal(deleteCheckpointFiles(runs, shared, run, step)), `${run} ${step}`).toBe(400);
    }
    expect(await completeSteps(runs, RUN)).toEqual([1, 2, 3]);
  });

  it("a symlink planted as a step folder is removed as a link: what it points at stays", async () => {
    const outside = path.join(root, "precious");
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, "keep.txt"), "keep");
    fs.rmSync(path.join(runs, RUN, "checkpoints", "0002"), { recursive: true });
    fs.symlinkSync(outside, path.join(runs, RUN, "checkpoints", "0002"));
    await deleteCheckpointFiles(runs, undefined, RUN, "2");
    expect(fs.readFileSync(path.join(outside, "keep.txt"), "utf8")).toBe("keep");
    expect(fs.existsSync(path.join(runs, RUN, "checkpoints", "0002"))).toBe(false);
  });
});
