/**
 * The web API against the REAL runner server (gpu-runner/src/server.ts, in this process on a random
 * port). Its engine is pointed at a closed port: compile checks and refusals need no engine.
 *   npx vitest run --project server features/runners/server/runner.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerRunner } from "@/server/runner-client";
import { startEnginelessRunner, type EnginelessRunner } from "@/server/test/engineless-runner";
import { callerFor, createRunningRun, createTestDb, newWorkspace, templateFiles, type TestDb } from "@/server/test/harness";
import { ensureDefaultExperiment } from "@/features/workspace/server";

let tdb: TestDb;
let runner: EnginelessRunner;
const db = () => tdb.handle.prisma;

beforeAll(async () => {
  tdb = await createTestDb();
  runner = await startEnginelessRunner("servertest");
});
afterAll(async () => {
  await runner?.close();
  await tdb?.drop();
});

async function setup(token = runner.token) {
  const ws = await newWorkspace(db());
  const name = `real-${ws}`;
  const runnerRow = await registerRunner(db(), { name, url: runner.url, token });
  const api = callerFor(db(), ws, name);
  const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
  return { ws, api, experimentId, runnerId: runnerRow.id };
}

describe("with the real runner", () => {
  it("experiments.validate returns the runner's diagnostics on the user's lines", async () => {
    const { api } = await setup();
    expect((await api.experiments.validate({ files: templateFiles(), kind: "dry-run" })).diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const broken = { ...templateFiles(), "reward.ts": "export default function reward(: number {\n" };
    const { diagnostics } = await api.experiments.validate({ files: broken, kind: "dry-run" });
    expect(diagnostics.length).toBeGreaterThan(0);
    expect(diagnostics[0]).toMatchObject({ file: "reward.ts", line: 1 });
  });

  it("validates a 5 MB experiment through the web tier (bodies, not URLs), and names a bad row of 10,000", async () => {
    const { api } = await setup();
    const files = {
      ...templateFiles(),
      "scenario.ts": `import type { RolloutContext } from "rollbook";\nimport { z } from "zod";\nexport const taskSchema = z.object({ word: z.string() });\nexport default async function rollout(ctx: RolloutContext<z.infer<typeof taskSchema>>) { return (await ctx.chat([{ role: "user", content: ctx.task.word }])).content; }\n`,
      "reward.ts": "export default function reward() { return 0; }\n",
      "tasks.jsonl": Array.from({ length: 60_000 }, (_, i) => JSON.stringify({ word: `w${i}`.padEnd(80, "x") })).join("\n"),
    };
    expect(files["tasks.jsonl"].length).toBeGreaterThan(5_000_000);
    expect((await api.experiments.validate({ files, kind: "dry-run" })).diagnostics).toEqual([]);
    const lines = files["tasks.jsonl"].split("\n").slice(0, 10_000);
    lines[6_999] = JSON.stringify({ word: 7 });
    const { diagnostics } = await api.experiments.validate({ files: { ...files, "tasks.jsonl": lines.join("\n") }, kind: "dry-run" });
    expect(diagnostics).toEqual([expect.objectContaining({ file: "tasks.jsonl", line: 7000, message: expect.stringContaining('field "word"') })]);
  });

  it("a refused start returns diagnostics and creates no run row", async () => {
    const { ws, api, experimentId } = await setup();
    const broken = { ...templateFiles(), "scenario.ts": templateFiles()["scenario.ts"] + "\nconst x: number = 'not a number';\n" };
    const res = await api.runs.start({ experimentId, files: broken, kind: "dry-run" });
    expect(res.ok).toBe(false);
    if (res.ok) throw new Error("unreachable");
    expect(res.diagnostics).toEqual(expect.arrayContaining([expect.objectContaining({ file: "scenario.ts" })]));
    expect(res.error).toContain("scenario.ts:");
    expect("runId" in res && res.runId).toBeFalsy();
    expect(await db().run.count({ where: { workspaceId: ws } })).toBe(0);
    // A refused start writes no version either (the text stays unsaved in the editor).
    expect((await api.experiments.get({ id: experimentId })).version.number).toBe(1);
  });

  it("a wrong token is a runner error, not a crash", async () => {
    const { api } = await setup("the-wrong-token-0000");
    const err = await api.experiments.validate({ files: templateFiles(), kind: "dry-run" }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "BAD_GATEWAY" });
    expect((err as Error).message).toMatch(/refused the call: missing or wrong runner token/);
    const status = await api.runners.status();
    expect(status).toMatchObject({ reachable: false });
  });

  it("runners.status reports the runner", async () => {
    const { api } = await setup();
    const status = await api.runners.status();
    // The caller owns its workspace but not the instance: the instance runner's URL is its operator's (runner-visibility.ts).
    expect(status).toMatchObject({ reachable: true, url: null, status: { runner: "servertest" } });
  });

  it("resume: only stopped/failed/lost train runs; accepted → running, refused → left as it was", async () => {
    const { ws, api, runnerId } = await setup();
    const runId = await createRunningRun(db(), ws);
    await db().run.update({ where: { id: runId }, data: { runnerId } });
    // Still running: nothing to resume.
    await expect(api.runs.resume({ id: runId })).rejects.toMatchObject({ code: "CONFLICT" });

    // A stopped train run goes back to the runner with resume: true and is running again.
    await db().run.update({ where: { id: runId }, data: { status: "stopped", finishedAt: new Date(), error: "x" } });
    // Its own runner answers: it continues there (nothing moves).
    expect(await api.runs.resume({ id: runId })).toEqual({ ok: true, runId, runnerId, moved: false });
    expect(await db().run.findUnique({ where: { id: runId }, select: { status: true, error: true, finishedAt: true } })).toEqual({
      status: "running",
      error: null,
      finishedAt: null,
    });
    const status = await api.runners.status();
    expect(status.status?.runs.map((r) => r.run_id)).toContain(runId);

    // The runner refuses (the stored code no longer compiles): the run stays stopped, nothing half-started.
    const refused = await createRunningRun(db(), ws);
    const row = await db().run.update({ where: { id: refused }, data: { runnerId, status: "stopped" }, select: { versionId: true } });
    const broken = { ...templateFiles(), "reward.ts": "export default function reward(: number {\n" };
    await db().experimentVersion.update({ where: { id: row.versionId }, data: { files: broken } });
    const res = await api.runs.resume({ id: refused });
    expect(res.ok).toBe(false);
    if (res.ok) throw new Error("unreachable");
    expect(res.diagnostics[0]).toMatchObject({ file: "reward.ts", line: 1 });
    expect(await db().run.findUnique({ where: { id: refused }, select: { status: true } })).toEqual({ status: "stopped" });

    // Dry runs have no checkpoints to resume from.
    await db().run.update({ where: { id: refused }, data: { kind: "dry_run" } });
    await expect(api.runs.resume({ id: refused })).rejects.toMatchObject({ code: "BAD_REQUEST" });
  });
});
