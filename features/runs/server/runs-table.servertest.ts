/**
 * The runs table and the exports on real Postgres: filters, sort by summary metrics, search, cursor pages
 * (no duplicate, no gap, under every sort), workspace isolation, tag/note editing by role, the summary kept
 * by ingestion, and the export route handlers called with a real API token.
 *   npx vitest run --project server features/runs/server/runs-table.servertest.ts
 */
import { randomUUID } from "node:crypto";
import Papa from "papaparse";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunConfig } from "@contracts";
import { handleRunMetricsCsv, handleRunsTableCsv, handleRunTrajectoriesJsonl } from "./export-http";
import { callerAs, callerFor, createRunningRun, createTestDb, newWorkspace, runEvents, templateFiles, userWithRole, type TestDb } from "@/server/test/harness";
import { createApiToken } from "@/features/workspace/server";
import { ingestEvents } from "@/features/run-lifecycle/server";
import { runsTableCsv, TRAJECTORY_PAGE } from "./run-export";
import { listRunsTable } from "./runs-table";
import type { RunsListInput } from "../runs-table-query";

let tdb: TestDb;
const db = () => tdb.handle.prisma;

interface Seed {
  id: string;
  number: number;
  status: "queued" | "running" | "completed" | "failed" | "stopped";
  kind: "train" | "dry_run" | "eval";
  tags: string[];
  notes: string;
  baseModel: string;
  createdAt: Date;
  summary: Record<string, number>;
  createdById: string | null;
  experiment: string;
}

let ws: string;
let other: string;
let alice: string;
let bob: string;
let seeds: Seed[] = [];
let otherRunId: string;

/** Runs with every attribute varied; reward_mean repeats (ties) and is missing on some (nulls). */
async function seed(workspaceId: string, n: number, opts: { prefix: string; authors: (string | null)[] }): Promise<Seed[]> {
  const exps = [];
  for (const name of [`${opts.prefix} say-the-word`, `${opts.prefix} tool-use agent`]) {
    exps.push(
      await db().experiment.create({
        data: { workspaceId, name, versions: { create: { number: 1, files: templateFiles(), filesHash: randomUUID() } } },
        include: { versions: true },
      }),
    );
  }
  const statuses = ["completed", "failed", "running", "stopped", "queued"] as const;
  const kinds = ["train", "dry_run", "eval"] as const;
  const out: Seed[] = [];
  for (let i = 0; i < n; i++) {
    const exp = exps[i % 2]!;
    const s: Seed = {
      id: `${opts.prefix}-run-${String(i).padStart(3, "0")}-${randomUUID().slice(0, 4)}`,
      number: i + 1,
      status: statuses[i % statuses.length]!,
      kind: kinds[i % kinds.length]!,
      tags: i % 4 === 0 ? ["baseline", `lr-${i}e-5`] : i % 4 === 1 ? ["ablation"] : [],
      notes: i % 5 === 0 ? `Tried a higher KL penalty ${opts.prefix}` : "",
      baseModel: i % 3 === 0 ? "Qwen/Qwen2.5-0.5B-Instruct" : "SmolLM2-135M-Instruct",
      // Some share a creation time (ties broken by id).
      createdAt: new Date(Date.UTC(2026, 10, 1 + Math.floor(i / 2), 12)),
      summary: i % 6 === 5 ? {} : { reward_mean: Math.round((i % 7) * 10) / 100, tokens_per_s: 100 + i },
      createdById: opts.authors[i % opts.authors.length] ?? null,
      experiment: exp.name,
    };
    if (i % 10 === 3) s.summary.eval_reward = i / 100;
    await db().run.create({
      data: {
        id: s.id,
        number: s.number,
        workspaceId,
        experimentId: exp.id,
        versionId: exp.versions[0]!.id,
        createdById: s.createdById,
        kind: s.kind,
        status: s.status,
        config: RunConfig.parse({}) as object,
        baseModel: s.baseModel,
        seed: 1,
        codeHash: "c",
        tasksHash: "t",
        tags: s.tags,
        notes: s.notes,
        summary: s.summary,
        createdAt: s.createdAt,
      },
    });
    out.push(s);
  }
  return out;
}

/** Every page of a listing, following the cursor. */
async function all(input: RunsListInput, limit = 4, workspaceId = ws) {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 200; pages++) {
    const page: Awaited<ReturnType<typeof listRunsTable>> = await listRunsTable(db(), workspaceId, { ...input, limit, cursor });
    ids.push(...page.items.map((r) => r.id));
    cursor = page.nextCursor;
    if (!cursor) return ids;
  }
  throw new Error("cursor never ended");
}

/** The order the table promises, computed here independently: value (missing last), then id, same direction. */
function expected(rows: Seed[], value: (s: Seed) => number | undefined, dir: "asc" | "desc") {
  const sign = dir === "asc" ? 1 : -1;
  return [...rows]
    .sort((a, b) => {
      const va = value(a);
      const vb = value(b);
      if (va === undefined || vb === undefined) {
        if (va !== vb) return va === undefined ? 1 : -1;
      } else if (va !== vb) return sign * (va - vb);
      return sign * (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    })
    .map((s) => s.id);
}

beforeAll(async () => {
  tdb = await createTestDb();
  ws = await newWorkspace(db());
  other = await newWorkspace(db());
  alice = (await userWithRole(db(), ws, "owner")).id;
  bob = (await userWithRole(db(), ws, "member")).id;
  seeds = await seed(ws, 30, { prefix: "alpha", authors: [alice, bob, null] });
  const theirs = await seed(other, 6, { prefix: "omega", authors: [null] });
  // The other workspace's runs carry the very words searched for here.
  await db().run.updateMany({ where: { workspaceId: other }, data: { tags: ["baseline", "ablation"], notes: "Tried a higher KL penalty alpha" } });
  otherRunId = theirs[0]!.id;
}, 120_000);
afterAll(async () => {
  await tdb?.drop();
});

const idsOf = (pred: (s: Seed) => boolean) => seeds.filter(pred).map((s) => s.id).sort();

describe("runs table: filters", () => {
  it("by status, kind, author, tag, base model, date range, and all of them together", async () => {
    const sorted = async (input: RunsListInput) => (await all(input)).sort();
    expect(await sorted({ status: ["failed", "stopped"] })).toEqual(idsOf((s) => s.status === "failed" || s.status === "stopped"));
    expect(await sorted({ kind: ["dry-run"] })).toEqual(idsOf((s) => s.kind === "dry_run"));
    expect(await sorted({ authorId: bob })).toEqual(idsOf((s) => s.createdById === bob));
    expect(await sorted({ tag: "baseline" })).toEqual(idsOf((s) => s.tags.includes("baseline")));
    expect(await sorted({ baseModel: "Qwen/Qwen2.5-0.5B-Instruct" })).toEqual(idsOf((s) => s.baseModel.startsWith("Qwen")));
    const from = new Date(Date.UTC(2026, 10, 3));
    const to = new Date(Date.UTC(2026, 10, 6));
    expect(await sorted({ from, to })).toEqual(idsOf((s) => s.createdAt >= from && s.createdAt < to));
    expect(await sorted({ status: ["completed"], kind: ["train"], tag: "baseline" })).toEqual(
      idsOf((s) => s.status === "completed" && s.kind === "train" && s.tags.includes("baseline")),
    );
    expect((await sorted({ tag: "baseline" })).length).toBeGreaterThan(0);
  });

  it("keeps the editor's call working: one experiment, newest first", async () => {
    const exp = await db().experiment.findFirstOrThrow({ where: { workspaceId: ws, name: "alpha tool-use agent" } });
    const page = await callerFor(db(), ws).runs.list({ experimentId: exp.id, limit: 15 });
    expect(page.items.every((r) => r.experimentName === "alpha tool-use agent")).toBe(true);
    expect(page.items.map((r) => r.id)).toEqual(expected(seeds.filter((s) => s.experiment === exp.name), (s) => s.createdAt.getTime(), "desc").slice(0, 15));
  });
});

describe("runs table: search", () => {
  const search = async (q: string) => (await all({ q })).sort();
  it("matches word prefixes in the experiment's name, the tags and the notes, every word somewhere", async () => {
    expect(await search("tool")).toEqual(idsOf((s) => s.experiment.includes("tool-use")));
    expect(await search("BASE")).toEqual(idsOf((s) => s.tags.includes("baseline")));
    expect(await search("penal")).toEqual(idsOf((s) => s.notes.includes("penalty")));
    // One word in the name, one in a tag: the run needs both.
    expect(await search("agent ablat")).toEqual(idsOf((s) => s.experiment.includes("agent") && s.tags.includes("ablation")));
    expect(await search("lr-8e-5")).toEqual(idsOf((s) => s.tags.includes("lr-8e-5")));
    expect(await search("#7")).toEqual(idsOf((s) => s.number === 7));
    expect(await search("zzzz-nothing")).toEqual([]);
    // Punctuation and tsquery syntax are just text.
    expect(await search("'&|!:*(")).toEqual([]);
    expect(await search("baseline")).not.toContain(otherRunId);
  });
});

describe("runs table: sort and cursor", () => {
  const metric = (k: string) => (s: Seed) => s.summary[k];
  const cases: [RunsListInput["sort"], (s: Seed) => number | undefined][] = [
    ["createdAt", (s) => s.createdAt.getTime()],
    ["number", (s) => s.number],
    ["m:reward_mean", metric("reward_mean")],
    ["m:eval_reward", metric("eval_reward")],
    ["m:no_such_metric", () => undefined],
  ];
  for (const [sort, value] of cases) {
    for (const dir of ["desc", "asc"] as const) {
      it(`${sort} ${dir}: pages of 4 add up to the whole order, no duplicate, no gap`, async () => {
        const got = await all({ sort, dir }, 4);
        expect(new Set(got).size).toBe(got.length);
        expect(got).toEqual(expected(seeds, value, dir));
      });
    }
  }

  it("with a filter and search too; page sizes 1 and 7 agree", async () => {
    const input: RunsListInput = { sort: "m:reward_mean", dir: "desc", kind: ["train", "eval"], q: "alpha" };
    const one = await all(input, 1);
    expect(await all(input, 7)).toEqual(one);
    expect(one).toEqual(expected(seeds.filter((s) => s.kind !== "dry_run"), metric("reward_mean"), "desc"));
  });

  it("refuses a cursor from another sort, and a forged one", async () => {
    const page = await listRunsTable(db(), ws, { sort: "number", limit: 3 });
    await expect(listRunsTable(db(), ws, { sort: "createdAt", limit: 3, cursor: page.nextCursor })).rejects.toThrow(/cursor: it belongs to another sort/);
    await expect(callerFor(db(), ws).runs.list({ cursor: "not-a-cursor" })).rejects.toThrow(/cursor/);
    await expect(callerFor(db(), ws).runs.list({ sort: "m:bad key;" as "m:x" })).rejects.toThrow(/summary metric name/);
  });

  it("shows the summary, tags, notes and author", async () => {
    const page = await callerFor(db(), ws).runs.list({ sort: "number", dir: "asc", limit: 1 });
    const r = page.items[0]!;
    const s = seeds[0]!;
    expect(r).toMatchObject({ id: s.id, tags: s.tags, notes: s.notes, summary: s.summary, createdBy: { id: alice } });
  });
});

describe("runs table: isolation", () => {
  it("another workspace's runs never appear, whatever the filter, and it sees only its own", async () => {
    const page = await callerFor(db(), ws).runs.list({ limit: 200, q: "omega" });
    expect(page.items).toEqual([]);
    const mine = await all({}, 50);
    expect(mine.sort()).toEqual(seeds.map((s) => s.id).sort());
    const theirs = await all({ q: "alpha" }, 50, other);
    expect(theirs.length).toBe(6); // their notes mention "alpha"; our runs are not theirs
    expect(theirs.some((id) => seeds.some((s) => s.id === id))).toBe(false);
    const facets = await callerFor(db(), ws).runs.facets();
    expect(facets.tags).toEqual(expect.arrayContaining(["baseline", "ablation"]));
    expect(facets.metrics).toEqual(expect.arrayContaining(["reward_mean", "eval_reward", "tokens_per_s"]));
    expect(facets.authors.map((a) => a.id).sort()).toEqual([alice, bob].sort());
  });
});

describe("runs.update: tags and notes", () => {
  it("a member edits them (trimmed, deduplicated); a viewer cannot; another workspace's run is not found", async () => {
    const id = seeds[1]!.id;
    const member = await callerAs(db(), ws, { role: "member" });
    const res = await member.runs.update({ id, tags: ["  best ", "best", "", "kl-0.1"], notes: "keep this one" });
    expect(res).toEqual({ id, tags: ["best", "kl-0.1"], notes: "keep this one" });
    expect((await all({ tag: "best" }))).toEqual([id]);
    expect(await all({ q: "keep" })).toEqual([id]);

    const viewer = await callerAs(db(), ws, { role: "viewer" });
    await expect(viewer.runs.update({ id, tags: ["x"] })).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(member.runs.update({ id: otherRunId, notes: "mine now" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect((await db().run.findUniqueOrThrow({ where: { id } })).tags).toEqual(["best", "kl-0.1"]);
    expect((await db().run.findUniqueOrThrow({ where: { id: otherRunId } })).notes).not.toBe("mine now");
  });

  it("refuses too many or too long tags and too long notes, naming the field, changing nothing", async () => {
    const id = seeds[2]!.id;
    const member = await callerAs(db(), ws, { role: "member" });
    const before = await db().run.findUniqueOrThrow({ where: { id }, select: { tags: true, notes: true } });
    await expect(member.runs.update({ id, tags: Array.from({ length: 21 }, (_, i) => `t${i}`) })).rejects.toThrow(/tags: at most 20 tags/);
    await expect(member.runs.update({ id, tags: ["x".repeat(41)] })).rejects.toThrow(/tags: each tag is at most 40 characters/);
    await expect(member.runs.update({ id, notes: "n".repeat(10_001) })).rejects.toThrow(/notes: at most 10,000 characters/);
    // Twenty distinct after trimming and deduplication is fine.
    await member.runs.update({ id, tags: [...Array.from({ length: 20 }, (_, i) => `t${i}`), " t0 "] });
    await db().run.update({ where: { id }, data: before });
  });
});

describe("summary kept by ingestion", () => {
  it("the last step's metrics and the last eval's reward land in Run.summary, and sort", async () => {
    const runId = await createRunningRun(db(), ws);
    await ingestEvents(db(), runId, runEvents(runId));
    const run = await db().run.findUniqueOrThrow({ where: { id: runId } });
    expect(run.summary).toMatchObject({ step: 1, reward_mean: 0.5, exception_rate: 0, tokens_per_s: 10, eval_reward: 0.75, eval_exception_rate: 0 });
    // Re-delivery changes nothing; a later batch merges (earlier keys stay).
    await ingestEvents(db(), runId, runEvents(runId));
    expect((await db().run.findUniqueOrThrow({ where: { id: runId } })).summary).toEqual(run.summary);
    const top = await listRunsTable(db(), ws, { sort: "m:eval_reward", limit: 1 });
    expect(top.items[0]!.id).toBe(runId); // 0.75 beats every seeded eval_reward (≤ 0.23)
    await db().run.delete({ where: { id: runId } });
  });
});

describe("exports", () => {
  let runId: string;
  let runNumber: number;
  let token: string;
  let otherToken: string;

  beforeAll(async () => {
    runId = await createRunningRun(db(), ws);
    const evs = runEvents(runId);
    await ingestEvents(db(), runId, evs);
    // More rollouts than one page of the stream, with token ids recorded on some.
    const extra = await db().trajectory.findFirstOrThrow({ where: { runId } });
    const rows = Array.from({ length: TRAJECTORY_PAGE + 5 }, (_, i) => ({
      ...extra,
      id: `bulk-${i}`,
      seq: 1000 + i,
      step: 2,
      task: extra.task as object,
      messages: extra.messages as object,
      metrics: extra.metrics as object,
      error: undefined,
      tokens: { prompt: 3, completion: 2 },
      timings: extra.timings as object,
      logs: extra.logs as object,
    }));
    await db().trajectory.createMany({ data: rows });
    runNumber = (await db().run.findUniqueOrThrow({ where: { id: runId } })).number;
    token = (await createApiToken(db(), { userId: alice, workspaceId: ws, name: "export" })).token;
    const stranger = await userWithRole(db(), other, "owner");
    otherToken = (await createApiToken(db(), { userId: stranger.id, workspaceId: other, name: "other" })).token;
  });

  const get = (path: string, t: string | null = token) =>
    new Request(`http://127.0.0.1${path}`, { headers: t ? { authorization: `Bearer ${t}` } : {} });

  it("a run's step metrics as CSV: a row per step, a column per metric, evals at their step", async () => {
    const res = await handleRunMetricsCsv(get(`/api/export/runs/${runId}/metrics`), runId, { db: db() });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(res.headers.get("content-disposition")).toContain(`run-${runNumber}-metrics.csv`);
    const parsed = Papa.parse<Record<string, string>>(await res.text(), { header: true, skipEmptyLines: true });
    expect(parsed.meta.fields?.slice(0, 2)).toEqual(["step", "reward_mean"]);
    expect(parsed.meta.fields).toEqual(expect.arrayContaining(["exception_rate", "tokens_per_s", "eval_reward_mean", "eval_exception_rate"]));
    expect(parsed.data.map((r) => r.step)).toEqual(["0", "1", "2"]);
    expect(parsed.data[0]).toMatchObject({ reward_mean: "0.5", exception_rate: "0.25", eval_reward_mean: "" });
    expect(parsed.data[2]).toMatchObject({ reward_mean: "", eval_reward_mean: "0.75" });
  });

  it("a run's trajectories as JSONL, every page, filtered by step; tokens=1 needs the run's runner", async () => {
    const plain = await handleRunTrajectoriesJsonl(get(`/api/export/runs/${runId}/trajectories`), runId, { db: db() });
    expect(plain.status).toBe(200);
    expect(plain.body).toBeInstanceOf(ReadableStream);
    const lines = (await plain.text()).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).toBe(8 + TRAJECTORY_PAGE + 5);
    const seqs = lines.map((l) => l.seq as number);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(lines[0]).toMatchObject({ run_id: runId, run_number: runNumber, step: 0, split: "train", messages: [{ role: "user" }, { role: "assistant" }] });
    expect(lines.at(-1)!.tokens).toEqual({ prompt: 3, completion: 2 });

    // Token sequences live on the run's runner (checkpoints.servertest.ts exports them from a real run); a run
    // that never reached one says so instead of exporting empty sequences.
    const withTokens = await handleRunTrajectoriesJsonl(get(`/api/export/runs/${runId}/trajectories?tokens=1&step=2`), runId, { db: db() });
    expect(withTokens.status).toBe(404);
    expect(await withTokens.text()).toContain("never reached a runner");
    const stepOnly = await handleRunTrajectoriesJsonl(get(`/api/export/runs/${runId}/trajectories?step=2`), runId, { db: db() });
    const tl = (await stepOnly.text()).trim().split("\n").map((l) => JSON.parse(l) as { step: number });
    expect(tl.length).toBe(TRAJECTORY_PAGE + 5);
    expect(tl.every((l) => l.step === 2)).toBe(true);

    const bad = await handleRunTrajectoriesJsonl(get(`/api/export/runs/${runId}/trajectories?split=test`), runId, { db: db() });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("split");
  });

  it("the runs table as CSV with the page's filters and order", async () => {
    const res = await handleRunsTableCsv(get(`/api/export/runs?tag=baseline&sort=m:reward_mean&dir=asc`), { db: db() });
    expect(res.status).toBe(200);
    const parsed = Papa.parse<Record<string, string>>(await res.text(), { header: true, skipEmptyLines: true });
    const want = expected(seeds.filter((s) => s.tags.includes("baseline")), (s) => s.summary.reward_mean, "asc");
    expect(parsed.data.map((r) => r.id)).toEqual(want);
    expect(parsed.meta.fields).toEqual(expect.arrayContaining(["number", "experiment", "tags", "notes", "summary.reward_mean"]));
    const first = parsed.data[0]!;
    expect(first.tags).toContain("baseline");

    // Pages of 7 (the route's are 200): everything, once, in order, one header.
    const stream = await runsTableCsv(db(), ws, { sort: "number", dir: "asc" }, 7);
    const text = await new Response(stream).text();
    expect(text.match(/^number,id,/gm)?.length).toBe(1);
    const rows = Papa.parse<Record<string, string>>(text, { header: true, skipEmptyLines: true }).data;
    expect(rows.map((r) => Number(r.number))).toEqual(Array.from({ length: seeds.length + 1 }, (_, i) => i + 1));
  });

  it("a note that looks like a formula is exported as text", async () => {
    const id = seeds[3]!.id;
    await db().run.update({ where: { id }, data: { notes: "=HYPERLINK(\"http://evil\")" } });
    const res = await handleRunsTableCsv(get(`/api/export/runs?q=${encodeURIComponent(`#${seeds[3]!.number}`)}`), { db: db() });
    const rows = Papa.parse<Record<string, string>>(await res.text(), { header: true, skipEmptyLines: true }).data;
    expect(rows.map((r) => r.notes)).toEqual(["'=HYPERLINK(\"http://evil\")"]);
    await db().run.update({ where: { id }, data: { notes: seeds[3]!.notes } });
  });

  it("no token → 401; another workspace's token → the run is 404 and the runs CSV has none of ours", async () => {
    expect((await handleRunMetricsCsv(get(`/api/export/runs/${runId}/metrics`, null), runId, { db: db() })).status).toBe(401);
    expect((await handleRunTrajectoriesJsonl(get(`/api/export/runs/${runId}/trajectories`, null), runId, { db: db() })).status).toBe(401);
    expect((await handleRunsTableCsv(get(`/api/export/runs`, null), { db: db() })).status).toBe(401);
    expect((await handleRunMetricsCsv(get(`/api/export/runs/${runId}/metrics`, "rbk_wrong"), runId, { db: db() })).status).toBe(401);

    const metrics = await handleRunMetricsCsv(get(`/api/export/runs/${runId}/metrics`, otherToken), runId, { db: db() });
    expect(metrics.status).toBe(404);
    const traj = await handleRunTrajectoriesJsonl(get(`/api/export/runs/${runId}/trajectories`, otherToken), runId, { db: db() });
    expect(traj.status).toBe(404);
    expect(await traj.text()).not.toContain("say w");
    const theirs = await handleRunsTableCsv(get(`/api/export/runs`, otherToken), { db: db() });
    const text = await theirs.text();
    expect(text).not.toContain(runId);
    expect(Papa.parse(text, { header: true, skipEmptyLines: true }).data.length).toBe(6);
  });
});
