/**
 * Experiments as projects (rename, duplicate, archive, delete, version history, restore) and the stale-tab
 * conflict, on real Postgres through the router with real roles; run starts against the REAL runner (in this
 * process, its engine on a closed port: compile checks need no engine) and a runner on a closed port.
 *   npx vitest run --project server features/experiments/server/experiment-projects.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Role } from "@contracts/roles";
import { registerRunner } from "@/server/runner-client";
import { startEnginelessRunner, type EnginelessRunner } from "@/server/test/engineless-runner";
import { createCaller } from "@/server/routers/_app";
import { createContext } from "@/server/trpc";
import { closedPort, createRunningRun, createTestDb, newWorkspace, templateFiles, userWithRole, type TestDb } from "@/server/test/harness";
import { ensureDefaultExperiment } from "@/features/workspace/server";

let tdb: TestDb;
let runner: EnginelessRunner;
const db = () => tdb.handle.prisma;

beforeAll(async () => {
  tdb = await createTestDb();
  runner = await startEnginelessRunner("projects-servertest");
});
afterAll(async () => {
  await runner?.close();
  await tdb?.drop();
});

/** A user with `role` in the workspace and a caller acting as them (through the real authorization). */
async function as(workspaceId: string, role: Role, runnerName?: string) {
  const user = await userWithRole(db(), workspaceId, role);
  const api = createCaller(createContext({ db: db(), principal: { user, tokenWorkspaceId: null, via: "session" }, workspaceId, runnerName, source: "test" }));
  return { user, api };
}

/** A workspace with its default experiment (version 1, made by Rollbook), its owner, and a runner: the real one or a closed port. */
async function workspace(kind: "real" | "closed" = "real") {
  const ws = await newWorkspace(db());
  const runnerName = `${kind}-${ws}`;
  const url = kind === "real" ? runner.url : `http://127.0.0.1:${await closedPort()}`;
  await registerRunner(db(), { name: runnerName, url, token: runner.token });
  const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
  const owner = await as(ws, "owner", runnerName);
  return { ws, runnerName, experimentId, owner };
}

const edit = (text: string) => ({ ...templateFiles(), "reward.ts": templateFiles()["reward.ts"] + `\n// ${text}\n` });
const versionCount = (experimentId: string) => db().experimentVersion.count({ where: { experimentId } });

describe("rename, duplicate, archive, delete", () => {
  it("rename: a taken name is a CONFLICT naming it; names are trimmed and checked", async () => {
    const { experimentId, owner } = await workspace();
    const other = await owner.api.experiments.createFromTemplate({ name: "taken name", template: null });
    await expect(owner.api.experiments.rename({ id: experimentId, name: "taken name" })).rejects.toMatchObject({
      code: "CONFLICT",
      message: expect.stringContaining('"taken name"'),
    });
    expect(await owner.api.experiments.rename({ id: experimentId, name: "  renamed  " })).toEqual({ id: experimentId, name: "renamed" });
    expect((await owner.api.experiments.get({ id: experimentId })).name).toBe("renamed");
    await expect(owner.api.experiments.rename({ id: experimentId, name: "   " })).rejects.toMatchObject({ code: "BAD_REQUEST" });
    // The other experiment is untouched.
    expect((await owner.api.experiments.get({ id: other.id })).name).toBe("taken name");
  });

  it("a viewer cannot rename, duplicate, archive, restore or delete; a member cannot delete (admins only)", async () => {
    const { ws, experimentId } = await workspace();
    const viewer = await as(ws, "viewer");
    const member = await as(ws, "member");
    for (const call of [
      () => viewer.api.experiments.rename({ id: experimentId, name: "by viewer" }),
      () => viewer.api.experiments.duplicate({ id: experimentId }),
      () => viewer.api.experiments.setArchived({ id: experimentId, archived: true }),
      () => viewer.api.experiments.restore({ id: experimentId, number: 1 }),
      () => viewer.api.experiments.delete({ id: experimentId }),
      () => member.api.experiments.delete({ id: experimentId }),
    ]) {
      await expect(call()).rejects.toMatchObject({ code: "FORBIDDEN" });
    }
    const exp = await db().experiment.findUniqueOrThrow({ where: { id: experimentId } });
    expect(exp).toMatchObject({ name: "say-the-word", archivedAt: null });
    expect(await db().experiment.count({ where: { workspaceId: ws } })).toBe(1);
    // Viewers still read the history.
    expect((await viewer.api.experiments.versions({ id: experimentId })).items).toHaveLength(1);
  });

  it("duplicate copies the latest version's files into a new experiment with a free '(copy N)' name", async () => {
    const { ws, experimentId } = await workspace();
    const member = await as(ws, "member");
    const files = { ...edit("v2"), "lib/util.ts": "export const two = 2;\n" };
    await member.api.experiments.save({ id: experimentId, files, baseVersion: 1 });

    const copy = await member.api.experiments.duplicate({ id: experimentId });
    expect(copy.name).toBe("say-the-word (copy)");
    const got = await member.api.experiments.get({ id: copy.id });
    expect(got.version).toMatchObject({ number: 1, files, author: member.user.name });
    expect(got.description).toBe((await member.api.experiments.get({ id: experimentId })).description);

    expect((await member.api.experiments.duplicate({ id: experimentId })).name).toBe("say-the-word (copy 2)");
    await expect(member.api.experiments.duplicate({ id: experimentId, name: "say-the-word" })).rejects.toMatchObject({ code: "CONFLICT" });
    // The original keeps its history.
    expect(await versionCount(experimentId)).toBe(2);
  });

  it("archive hides it from the list (unless asked), its runs stay readable; unarchive brings it back", async () => {
    const { ws, owner } = await workspace();
    const runId = await createRunningRun(db(), ws);
    const { experimentId } = await db().run.update({ where: { id: runId }, data: { status: "completed", finishedAt: new Date() }, select: { experimentId: true } });

    expect((await owner.api.experiments.list()).map((e) => e.id)).toContain(experimentId);
    const archived = await owner.api.experiments.setArchived({ id: experimentId, archived: true });
    expect(archived.archivedAt).toBeInstanceOf(Date);
    expect((await owner.api.experiments.list()).map((e) => e.id)).not.toContain(experimentId);
    const all = await owner.api.experiments.list({ includeArchived: true });
    expect(all.find((e) => e.id === experimentId)).toMatchObject({ archivedAt: archived.archivedAt, runCount: 1 });

    expect((await owner.api.runs.get({ id: runId })).id).toBe(runId);
    expect((await owner.api.runs.list({})).items.map((r) => r.id)).toContain(runId);
    expect((await owner.api.experiments.get({ id: experimentId })).archivedAt).toEqual(archived.archivedAt);

    expect((await owner.api.experiments.setArchived({ id: experimentId, archived: false })).archivedAt).toBeNull();
    expect((await owner.api.experiments.list()).map((e) => e.id)).toContain(experimentId);
  });

  it("delete is refused while a run is running, naming it; then cascades the versions and runs", async () => {
    const { ws, owner } = await workspace();
    const admin = await as(ws, "admin");
    const runId = await createRunningRun(db(), ws);
    const run = await db().run.findUniqueOrThrow({ where: { id: runId }, select: { experimentId: true, number: true } });
    const { experimentId } = run;
    await owner.api.experiments.save({ id: experimentId, files: edit("second version") });

    await expect(admin.api.experiments.delete({ id: experimentId })).rejects.toMatchObject({
      code: "CONFLICT",
      message: expect.stringMatching(new RegExp(`#${run.number} \\(running\\).*stop it before deleting`)),
    });
    expect(await versionCount(experimentId)).toBe(2);
    expect(await db().run.count({ where: { id: runId } })).toBe(1);

    await db().run.update({ where: { id: runId }, data: { status: "stopped", finishedAt: new Date() } });
    const res = await admin.api.experiments.delete({ id: experimentId });
    expect(res).toMatchObject({ id: experimentId, deletedRuns: 1, deletedVersions: 2 });
    expect(await versionCount(experimentId)).toBe(0);
    expect(await db().run.count({ where: { id: runId } })).toBe(0);
    await expect(owner.api.experiments.get({ id: experimentId })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(admin.api.experiments.delete({ id: experimentId })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("another workspace's experiment reads as NOT_FOUND for every project action", async () => {
    const a = await workspace();
    const b = await workspace();
    for (const call of [
      () => a.owner.api.experiments.rename({ id: b.experimentId, name: "stolen" }),
      () => a.owner.api.experiments.duplicate({ id: b.experimentId }),
      () => a.owner.api.experiments.setArchived({ id: b.experimentId, archived: true }),
      () => a.owner.api.experiments.restore({ id: b.experimentId, number: 1 }),
      () => a.owner.api.experiments.versions({ id: b.experimentId }),
      () => a.owner.api.experiments.delete({ id: b.experimentId }),
    ]) {
      await expect(call()).rejects.toMatchObject({ code: "NOT_FOUND" });
    }
    expect(await db().experiment.findUniqueOrThrow({ where: { id: b.experimentId } })).toMatchObject({ name: "say-the-word", archivedAt: null });
  });
});

describe("version history and restore", () => {
  it("lists who saved each version, when, and which files changed", async () => {
    const { ws, experimentId, owner } = await workspace();
    const member = await as(ws, "member");
    await owner.api.experiments.save({ id: experimentId, files: { ...templateFiles(), "lib/a.ts": "export const a = 1;\n" }, baseVersion: 1 });
    await member.api.experiments.save({ id: experimentId, files: { ...edit("member"), "lib/a.ts": "export const a = 1;\n" }, baseVersion: 2 });
    await member.api.experiments.save({ id: experimentId, files: edit("member") });

    const { items, nextBefore } = await member.api.experiments.versions({ id: experimentId });
    expect(nextBefore).toBeNull();
    expect(items.map((v) => [v.number, v.author?.name ?? null])).toEqual([
      [4, member.user.name],
      [3, member.user.name],
      [2, owner.user.name],
      [1, null], // the default experiment: made by Rollbook
    ]);
    expect(items.map((v) => v.changes)).toEqual([
      [{ path: "lib/a.ts", change: "removed" }],
      [{ path: "reward.ts", change: "modified" }],
      [{ path: "lib/a.ts", change: "added" }],
      ["config.json", "reward.ts", "scenario.ts", "tasks.jsonl"].map((p) => ({ path: p, change: "added" })),
    ]);
    expect(items.every((v) => v.createdAt instanceof Date)).toBe(true);

    // Paged: the next page starts below the last number shown, and the first page's oldest is compared with
    // a version it did not list.
    const page1 = await member.api.experiments.versions({ id: experimentId, limit: 2 });
    expect(page1.items.map((v) => v.number)).toEqual([4, 3]);
    expect(page1.nextBefore).toBe(3);
    expect(page1.items[1]!.changes).toEqual([{ path: "reward.ts", change: "modified" }]);
    const page2 = await member.api.experiments.versions({ id: experimentId, limit: 2, before: 3 });
    expect(page2.items.map((v) => v.number)).toEqual([2, 1]);
    expect(page2.nextBefore).toBeNull();

    // The version an editor opens says who saved it.
    expect((await owner.api.experiments.get({ id: experimentId, versionNumber: 2 })).version.author).toBe(owner.user.name);
  });

  it("restore makes a new version with the old files (restoredFrom), never rewriting history", async () => {
    const { ws, experimentId } = await workspace();
    const member = await as(ws, "member");
    await member.api.experiments.save({ id: experimentId, files: edit("two") });
    await member.api.experiments.save({ id: experimentId, files: edit("three") });
    const before = await db().experimentVersion.findMany({ where: { experimentId }, orderBy: { number: "asc" } });

    const res = await member.api.experiments.restore({ id: experimentId, number: 1, baseVersion: 3 });
    expect(res).toMatchObject({ number: 4, created: true, restoredFrom: 1 });
    const latest = await member.api.experiments.get({ id: experimentId });
    expect(latest.version).toMatchObject({ number: 4, files: templateFiles(), restoredFrom: 1, author: member.user.name });
    // Versions 1–3 are exactly as they were.
    const after = await db().experimentVersion.findMany({ where: { experimentId, number: { lte: 3 } }, orderBy: { number: "asc" } });
    expect(after).toEqual(before);
    expect((await member.api.experiments.versions({ id: experimentId })).items[0]).toMatchObject({ number: 4, restoredFrom: 1 });

    // Restoring what the latest already holds writes nothing.
    expect(await member.api.experiments.restore({ id: experimentId, number: 1 })).toMatchObject({ number: 4, created: false });
    await expect(member.api.experiments.restore({ id: experimentId, number: 9 })).rejects.toMatchObject({ code: "NOT_FOUND", message: expect.stringContaining("no version 9") });
    // A stale restore (someone saved after the tab opened version 2) is a conflict too.
    await expect(member.api.experiments.restore({ id: experimentId, number: 2, baseVersion: 2 })).rejects.toMatchObject({ code: "CONFLICT" });
    expect(await versionCount(experimentId)).toBe(4);
  });
});

describe("the stale tab", () => {
  it("a save based on an older version, when a newer one has other files, is a CONFLICT and writes nothing", async () => {
    const { ws, experimentId } = await workspace();
    const alice = await as(ws, "member");
    const bob = await as(ws, "member");
    // Both opened version 1; Bob saves first.
    const bobs = await bob.api.experiments.save({ id: experimentId, files: edit("bob"), baseVersion: 1 });
    expect(bobs).toMatchObject({ number: 2, created: true });
    const bobsRow = await db().experimentVersion.findUniqueOrThrow({ where: { id: bobs.versionId } });

    const err = await alice.api.experiments.save({ id: experimentId, files: edit("alice"), baseVersion: 1 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "CONFLICT" });
    const when = `${bobsRow.createdAt.toISOString().slice(0, 19).replace("T", " ")} UTC`;
    expect((err as Error).message).toBe(
      `version 2 was saved by ${bob.user.name} at ${when} after you opened version 1 — your text is kept in the editor; review the changes (diff) and save again`,
    );
    expect(await versionCount(experimentId)).toBe(2);
    expect((await alice.api.experiments.get({ id: experimentId })).version.files).toEqual(edit("bob"));

    // Saving exactly what the latest holds loses nothing: no conflict, no new version.
    expect(await alice.api.experiments.save({ id: experimentId, files: edit("bob"), baseVersion: 1 })).toEqual({ ...bobs, created: false });
    // After reviewing, based on version 2: saved.
    expect(await alice.api.experiments.save({ id: experimentId, files: edit("alice"), baseVersion: 2 })).toMatchObject({ number: 3, created: true });
    // A version that does not exist yet is bad input naming the field; API callers without baseVersion still save.
    await expect(alice.api.experiments.save({ id: experimentId, files: edit("x"), baseVersion: 9 })).rejects.toMatchObject({
      code: "BAD_REQUEST",
      message: expect.stringContaining("baseVersion"),
    });
    expect(await alice.api.experiments.save({ id: experimentId, files: edit("api") })).toMatchObject({ number: 4, created: true });
  });

  it("runs.start from a stale tab is a CONFLICT before anything is written", async () => {
    const { ws, experimentId, owner } = await workspace();
    await owner.api.experiments.save({ id: experimentId, files: edit("newer"), baseVersion: 1 });
    await expect(owner.api.runs.start({ experimentId, files: edit("stale"), kind: "dry-run", baseVersion: 1 })).rejects.toMatchObject({
      code: "CONFLICT",
      message: expect.stringContaining("after you opened version 1"),
    });
    expect(await versionCount(experimentId)).toBe(2);
    expect(await db().run.count({ where: { workspaceId: ws } })).toBe(0);
  });
});

describe("a run refused before it starts creates no version", () => {
  it("compile diagnostics (real runner) and a broken config leave the version count unchanged", async () => {
    const { ws, experimentId, owner } = await workspace();
    const broken = { ...templateFiles(), "scenario.ts": templateFiles()["scenario.ts"] + "\nconst x: number = 'not a number';\n" };
    const res = await owner.api.runs.start({ experimentId, files: broken, kind: "dry-run", baseVersion: 1 });
    expect(res.ok).toBe(false);
    if (res.ok) throw new Error("unreachable");
    expect(res.diagnostics).toEqual(expect.arrayContaining([expect.objectContaining({ file: "scenario.ts" })]));

    const badConfig = { ...templateFiles(), "config.json": '{ "num_steps": 0 }' };
    const res2 = await owner.api.runs.start({ experimentId, files: badConfig, kind: "train", baseVersion: 1 });
    expect(res2).toMatchObject({ ok: false, diagnostics: [expect.objectContaining({ file: "config.json" })] });

    expect(await versionCount(experimentId)).toBe(1);
    expect(await db().run.count({ where: { workspaceId: ws } })).toBe(0);
  });

  it("an unreachable runner leaves the version count unchanged (a failed row only against files already saved)", async () => {
    const { ws, experimentId, owner } = await workspace("closed");
    const res = await owner.api.runs.start({ experimentId, files: edit("never ran"), kind: "dry-run", baseVersion: 1 });
    expect(res).toMatchObject({ ok: false, error: expect.stringContaining("unreachable") });
    expect("runId" in res && res.runId).toBeFalsy();
    expect(await versionCount(experimentId)).toBe(1);
    expect(await db().run.count({ where: { workspaceId: ws } })).toBe(0);

    // The saved files: the attempt is recorded as a failed run of version 1, still no new version.
    const same = await owner.api.runs.start({ experimentId, files: templateFiles(), kind: "dry-run", baseVersion: 1 });
    expect(same).toMatchObject({ ok: false, runId: expect.any(String) });
    expect(await versionCount(experimentId)).toBe(1);
    const row = await db().run.findFirstOrThrow({ where: { workspaceId: ws }, select: { status: true, version: { select: { number: true } } } });
    expect(row).toEqual({ status: "failed", version: { number: 1 } });
  });

  it("an accepted start writes the version (saved by the starter) and the run together", async () => {
    const { ws, experimentId, owner } = await workspace();
    const res = await owner.api.runs.start({ experimentId, files: edit("runs"), kind: "dry-run", baseVersion: 1 });
    expect(res).toMatchObject({ ok: true, versionNumber: 2 });
    if (!res.ok) throw new Error("unreachable");
    await owner.api.runs.stop({ id: res.runId }).catch(() => undefined);
    const v = await db().experimentVersion.findUniqueOrThrow({ where: { experimentId_number: { experimentId, number: 2 } }, select: { createdById: true, runs: { select: { id: true } } } });
    expect(v).toEqual({ createdById: owner.user.id, runs: [{ id: res.runId }] });
    expect(await db().run.count({ where: { workspaceId: ws } })).toBe(1);
  });
});
