/**
 * Which checkpoint is "best", which `<run>@best` names are aliases, and what keep_last deletes.
 *   npx vitest run --project unit features/checkpoints/server/best-checkpoint.test.ts
 */
import { describe, expect, it } from "vitest";
import { CheckpointsConfig, classifyModelName, parseBestModelName, RunConfig } from "@contracts";
import { pickBest } from "./best-checkpoint";
import { stepsToDelete } from "./checkpoint-retention";

describe("pickBest", () => {
  it("is the highest validation reward among the checkpoints that exist; ties → the earliest", () => {
    const rewards = new Map<number, number | null>([[4, 0.75], [8, 0.75], [12, 0], [16, null]]);
    expect(pickBest(rewards, [1, 2, 4, 8, 12, 16])).toEqual({ step: 4, reward: 0.75 });
    expect(pickBest(rewards, [8, 12, 16])).toEqual({ step: 8, reward: 0.75 }); // step 4 deleted
    expect(pickBest(rewards, [1, 2, 16])).toBeNull(); // none evaluated (or all rollouts failed)
    expect(pickBest(new Map([[3, -0.5], [5, -0.2]]), [3, 5])).toEqual({ step: 5, reward: -0.2 });
  });
});

describe("<run>@best", () => {
  it("takes a run id or number with exactly the suffix @best", () => {
    expect(parseBestModelName("12@best")).toBe("12");
    expect(parseBestModelName("cmrun_ABC-9@best")).toBe("cmrun_ABC-9");
  });

  it("refuses every other spelling, and the shared grammar never reads one as a checkpoint or base model", () => {
    const hostile = ["@best", "12@BEST", "12@Best", "12@best2", "12@best\n", " 12@best", "12@@best", "12@3@best", "12@best@3", "../12@best", "12 @best", "12@bést", "12@best ", "12/x@best", "x".repeat(129) + "@best", "12@3"];
    for (const name of hostile) expect(parseBestModelName(name), JSON.stringify(name)).toBeNull();
    for (const name of ["12@best", ...hostile.filter((n) => n.includes("best"))]) expect(classifyModelName(name).kind, JSON.stringify(name)).toBe("invalid");
  });
});

describe("stepsToDelete (config checkpoints)", () => {
  const policy = (o: Partial<CheckpointsConfig>) => CheckpointsConfig.parse(o);

  it("keeps everything by default", () => {
    expect(RunConfig.parse({}).checkpoints).toEqual({ keep_last: null, keep_best: true });
    expect(stepsToDelete([1, 2, 3, 4], policy({}), 2)).toEqual([]);
  });

  it("keeps the newest N and the best; never the newest, never the best", () => {
    expect(stepsToDelete([1, 2, 3, 4, 5], policy({ keep_last: 2 }), 1)).toEqual([2, 3]);
    expect(stepsToDelete([1, 2, 3, 4, 5], policy({ keep_last: 2, keep_best: false }), 1)).toEqual([1, 2, 3]);
    expect(stepsToDelete([1, 2, 3, 4, 5], policy({ keep_last: 1 }), 5)).toEqual([1, 2, 3, 4]);
    expect(stepsToDelete([1, 2, 3], policy({ keep_last: 1 }), null)).toEqual([1, 2]);
  });

  it("refuses a keep_last that is not a whole number ≥ 1, naming the field", () => {
    for (const bad of [0, -1, 1.5, "2"]) {
      const r = RunConfig.safeParse({ checkpoints: { keep_last: bad } });
      expect(r.success).toBe(false);
      expect(r.error!.issues[0]!.path).toEqual(["checkpoints", "keep_last"]);
    }
    expect(RunConfig.safeParse({ checkpoints: { keep_lats: 2 } }).success).toBe(false);
  });
});
