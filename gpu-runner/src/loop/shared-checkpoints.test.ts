import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CHECKPOINT_FILES, claimSharedRun, completeSteps, fetchSharedCheckpoints, publishCheckpoint, setAsideNewerCheckpoints } from "./shared-checkpoints";

const dirs: string[] = [];
const mk = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-shared-ck-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
const ck = (root: string, step: number) => path.join(root, "r1", "checkpoints", String(step).padStart(4, "0"));

function plant(root: string, step: number, tag: string, complete = true): void {
  fs.mkdirSync(ck(root, step), { recursive: true });
  for (const f of CHECKPOINT_FILES) if (complete || f !== "trainer_state.json") fs.writeFileSync(path.join(ck(root, step), f), `${tag}:${f}`);
}
const read = (root: string, step: number, f = "optimizer.pt") => fs.readFileSync(path.join(ck(root, step), f), "utf8");

describe("shared checkpoints", () => {
  it("publishes a checkpoint whole, keeps the first copy of a step, and lists only complete ones", async () => {
    const [runs, shared] = [mk(), mk()];
    plant(runs, 1, "a");
    fs.writeFileSync(path.join(runs, "r1", "tokens.jsonl"), "tokens\n");
    await publishCheckpoint(runs, shared, "r1", 1, "me");
    expect(read(shared, 1)).toBe("a:optimizer.pt");
    // The token view's log travels with it (train-logprobs.jsonl absent here: skipped).
    expect(fs.readFileSync(path.join(shared, "r1", "tokens.jsonl"), "utf8")).toBe("tokens\n");
    expect(fs.existsSync(path.join(shared, "r1", "train-logprobs.jsonl"))).toBe(false);
    expect(fs.readdirSync(path.dirname(ck(shared, 1)))).toEqual(["0001"]); // no temp folder left
    expect(fs.readdirSync(path.join(shared, "r1")).sort()).toEqual(["checkpoints", "tokens.jsonl"]); // nor temp file

    fs.rmSync(ck(runs, 1), { recursive: true });
    plant(runs, 1, "b"); // another runner's step 1: the share keeps the first
    await publishCheckpoint(runs, shared, "r1", 1, "me");
    expect(read(shared, 1)).toBe("a:optimizer.pt");

    plant(shared, 2, "x", false); // a folder without its marker is not a checkpoint
    expect(await completeSteps(shared, "r1")).toEqual([1]);
    await expect(publishCheckpoint(runs, shared, "../r1", 1, "me")).rejects.toThrow(/invalid run id/);
  });

  it("after a move only the runner that took the run publishes it (the one it left may still be running it)", async () => {
    const [runs, shared] = [mk(), mk()];
    plant(runs, 1, "old");
    await claimSharedRun(shared, "r1", "new-home");
    await expect(publishCheckpoint(runs, shared, "r1", 1, "old-home")).rejects.toThrow("the run was moved to runner 'new-home'");
    expect(fs.existsSync(ck(shared, 1))).toBe(false);
    await publishCheckpoint(runs, shared, "r1", 1, "new-home");
    expect(read(shared, 1)).toBe("old:optimizer.pt");
  });

  it("fetches shared steps up to the recorded one, and sets newer local ones aside", async () => {
    const [runs, shared] = [mk(), mk()];
    for (const s of [1, 2, 3]) plant(shared, s, `shared${s}`);
    plant(runs, 4, "stale");
    expect(await fetchSharedCheckpoints(runs, shared, "r1", 2)).toBe(true);
    expect(await completeSteps(runs, "r1")).toEqual([1, 2, 4]);
    expect(read(runs, 2)).toBe("shared2:optimizer.pt");
    expect(await setAsideNewerCheckpoints(runs, "r1", 2)).toEqual([4]);
    expect(await completeSteps(runs, "r1")).toEqual([1, 2]);
    expect(fs.readdirSync(path.join(runs, "r1", "superseded-checkpoints"))).toHaveLength(1);
    expect(await fetchSharedCheckpoints(runs, shared, "r1", 5)).toBe(false);
    expect(await fetchSharedCheckpoints(runs, shared, "r1", 0)).toBe(true);
  });
});
