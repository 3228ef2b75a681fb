/**
 * New experiments from templates, and the runtime errors the editor marks, against a real Postgres.
 *   npx vitest run --project server features/experiments/server/templates.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExperimentFiles, RunEvent } from "@contracts";
import { callerFor, createRunningRun, createTestDb, newWorkspace, runEvents, trajectory, type TestDb } from "@/server/test/harness";
import { ingestEvents } from "@/features/run-lifecycle/server";
import { BLANK_FILES, readTemplate } from "./templates";

let tdb: TestDb;
const db = () => tdb.handle.prisma;

beforeAll(async () => {
  tdb = await createTestDb();
});
afterAll(async () => {
  await tdb?.drop();
});

describe("templates", () => {
  it("lists the repository's templates in picker order, each with its files", async () => {
    const api = callerFor(db(), await newWorkspace(db()));
    const list = await api.templates.list();
    expect(list[0]).toMatchObject({ name: "say-the-word", title: "Say the word" });
    const calc = list.find((t) => t.name === "calculator");
    expect(calc?.paths).toEqual(["scenario.ts", "reward.ts", "tasks.jsonl", "config.json", "lib/calculator.ts"]);
    const orders = list.map((t) => t.order);
    expect(orders).toEqual([...orders].sort((a, b) => a - b));
  });

  it("creates an experiment with a template's files, lib/ included, and its description", async () => {
    const api = callerFor(db(), await newWorkspace(db()));
    const { id } = await api.experiments.createFromTemplate({ name: "  calc one  ", template: "calculator" });
    const exp = await api.experiments.get({ id });
    expect(exp.name).toBe("calc one");
    expect(exp.description).toMatch(/Tool use/);
    expect(exp.version.number).toBe(1);
    expect(exp.version.files).toEqual(await readTemplate("calculator"));
  });

  it("creates a blank experiment whose files pass the contract", async () => {
    const api = callerFor(db(), await newWorkspace(db()));
    const { id } = await api.experiments.createFromTemplate({ name: "blank", description: "mine", template: null });
    const exp = await api.experiments.get({ id });
    expect(exp.description).toBe("mine");
    expect(exp.version.files).toEqual(BLANK_FILES);
    expect(ExperimentFiles.safeParse(BLANK_FILES).success).toBe(true);
  });

  it("refuses a duplicate name with CONFLICT naming it, an empty name, and an unknown template", async () => {
    const api = callerFor(db(), await newWorkspace(db()));
    await api.experiments.createFromTemplate({ name: "dup", template: "say-the-word" });
    await expect(api.experiments.createFromTemplate({ name: "dup", template: null })).rejects.toMatchObject({
      code: "CONFLICT",
      message: 'an experiment named "dup" already exists',
    });
    await expect(api.experiments.createFromTemplate({ name: "   ", template: null })).rejects.toMatchObject({ code: "BAD_REQUEST" });
    await expect(api.experiments.createFromTemplate({ name: "x", template: "no-such" })).rejects.toMatchObject({
      code: "NOT_FOUND",
      message: 'no template named "no-such"',
    });
    await expect(api.experiments.createFromTemplate({ name: "y", template: "../etc" })).rejects.toMatchObject({ code: "BAD_REQUEST" });
  });
});

describe("experiments.latestRuntimeErrors", () => {
  it("is null before any run produced rollouts", async () => {
    const api = callerFor(db(), await newWorkspace(db()));
    const { id } = await api.experiments.createFromTemplate({ name: "fresh", template: "say-the-word" });
    expect(await api.experiments.latestRuntimeErrors({ id })).toBeNull();
  });

  it("groups the latest run's errors (most frequent first) and returns its code files only", async () => {
    const ws = await newWorkspace(db());
    const api = callerFor(db(), ws);
    const runId = await createRunningRun(db(), ws);
    const run = await db().run.findUniqueOrThrow({ where: { id: runId }, select: { experimentId: true } });
    const stack = "Error: bad\n    at check (lib/check.ts:3:11)\n    at rollout (scenario.ts:6:3)";
    const failing = (i: number, message: string, withStack: boolean) => ({
      ...trajectory(i, 5, null),
      id: `err-${i}`,
      error: { kind: "thrown" as const, message, ...(withStack ? { stack } : {}) },
    });
    const extra: RunEvent[] = [failing(0, "bad", true), failing(1, "bad", true), failing(2, "other", false)].map((t, i) =>
      RunEvent.parse({ run_id: runId, seq: 100 + i, ts: 1, type: "rollout.finished", payload: t }),
    );
    await ingestEvents(db(), runId, [...runEvents(runId).slice(0, -1), ...extra]);

    const res = await api.experiments.latestRuntimeErrors({ id: run.experimentId });
    expect(res?.run).toMatchObject({ id: runId, kind: "train" });
    expect(Object.keys(res?.code ?? {})).toEqual(["scenario.ts", "reward.ts"]);
    expect(res?.errors).toEqual([
      { kind: "thrown", message: "bad", stack, count: 2 },
      // runEvents' own failing rollout and ours say "boom"/"other" once each.
      ...[
        { kind: "thrown", message: "boom", stack: null, count: 1 },
        { kind: "thrown", message: "other", stack: null, count: 1 },
      ],
    ]);
  });
});
