/**
 * Issue 16, findings 8 and 4, with three real accounts (signed up through Better Auth) across two
 * workspaces, through the real HTTP handlers and a real (engineless) runner shared by both workspaces:
 *
 * - finding 8: a cookie session whose x-rollbook-workspace header names a workspace the user is not in is
 *   403 naming it (it used to act silently in the user's own workspace); a stale workspace *cookie* still
 *   falls back to the user's own (see server/auth/workspace-access.ts);
 * - finding 4: runners.status shows a caller only its workspace's runs, and the runner's URL and engine
 *   health only to admins; runners.list hides URLs and errors from non-admins and counts only the
 *   caller's runs.
 * - issue 29, item 5: every sign-up owns a workspace, so "admin" is no barrier: the instance's runner (its
 *   URL, engine health and memory, queue, error texts naming its address) and the checkpoints' paths on its
 *   disk are the instance operator's (Alice here: the first account, owner of the default workspace; or
 *   whoever ROLLBOOK_OPERATOR_EMAILS names), never Bob's, though Bob owns workspace B; a workspace admin
 *   still sees the runners their own workspace registered. Error texts name a runner, never its address.
 *
 *   npx vitest run --project server server/security/workspace-confusion.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import superjson from "superjson";
import { handleAuthRequest } from "../http/auth-handler";
import { handleTrpcRequest } from "../http/trpc-handler";
import { handleRunsTableCsv } from "@/features/runs/server";
import { handleRunEvents } from "@/features/run-view/server";
import { ingestEvents } from "@/features/run-lifecycle/server";
import { resetEnv } from "../env";
import { WORKSPACE_COOKIE, WORKSPACE_HEADER } from "@contracts/cookies";
import { registerRunner } from "../runner-client";
import { dispatcherFor } from "@/features/run-lifecycle/server";
import { ensureDefaultWorkspace } from "@/features/workspace/server";
import { startEnginelessRunner, type EnginelessRunner } from "../test/engineless-runner";
import { closedPort, createRunningRun, createTestDb, runEvents, templateFiles, type TestDb } from "../test/harness";

const ORIGIN = "http://127.0.0.1:3000";
const runnerName = "shared-runner";
/** What only the runner's operator (and workspace admins) may read: engine memory, an internal path. */
const ENGINE_SECRET_BYTES = 43_210_987_654;
const RESTART_SECRET = "/srv/rollbook/internal/engine.log";

let tdb: TestDb;
let runner: EnginelessRunner;
const db = () => tdb.handle.prisma;

interface Person {
  cookie: string;
  id: string;
  /** Their own workspace (made at sign-up). */
  own: string;
}
let alice: Person; // owner of A
let bob: Person; // owner of B
let carol: Person; // viewer in A, member in B
let A: string;
let B: string;
let runA: string;
let runB: string;

async function signUp(name: string, ip: string): Promise<Person> {
  const res = await handleAuthRequest(
    new Request(`${ORIGIN}/api/auth/sign-up/email`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN, "x-forwarded-for": ip },
      body: JSON.stringify({ name, email: `${name.toLowerCase()}@example.com`, password: `${name} correct horse 1` }),
    }),
    db(),
  );
  const set = res.headers.getSetCookie().find((c) => c.startsWith("rollbook.session_token="));
  if (!set) throw new Error(`sign-up of ${name}: no session cookie (status ${res.status})`);
  const user = await db().user.findUniqueOrThrow({ where: { email: `${name.toLowerCase()}@example.com` }, select: { id: true } });
  const own = await db().membership.findFirstOrThrow({ where: { userId: user.id }, select: { workspaceId: true } });
  return { cookie: set.split(";")[0]!, id: user.id, own: own.workspaceId };
}

type TrpcBody = { error?: { json: { message: string; data: { code: string } } }; result?: { data: unknown } };

/** A tRPC call as the browser (or a script using a session) makes it. */
async function call(who: Person, path: string, input: unknown, opts: { header?: string; cookieWorkspace?: string; mutation?: boolean } = {}) {
  const headers: Record<string, string> = {
    origin: ORIGIN,
    cookie: opts.cookieWorkspace ? `${who.cookie}; ${WORKSPACE_COOKIE}=${opts.cookieWorkspace}` : who.cookie,
    ...(opts.header ? { [WORKSPACE_HEADER]: opts.header } : {}),
  };
  const encoded = JSON.stringify(superjson.serialize(input));
  const req = opts.mutation
    ? new Request(`${ORIGIN}/api/trpc/${path}`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: encoded })
    : new Request(`${ORIGIN}/api/trpc/${path}?input=${encodeURIComponent(encoded)}`, { headers });
  const res = await handleTrpcRequest(req, db(), { runnerName });
  const body = (await res.json()) as TrpcBody;
  return { status: res.status, message: body.error?.json.message ?? null, data: body.result ? superjson.deserialize(body.result.data as never) : undefined };
}

async function snapshot() {
  return {
    tokens: await db().apiToken.count(),
    experiments: await db().experiment.count(),
    versions: await db().experimentVersion.count(),
    runs: await db().run.count(),
    names: await db().workspace.findMany({ orderBy: { id: "asc" }, select: { id: true, name: true } }),
  };
}

async function startDryRun(who: Person, workspaceId: string): Promise<string> {
  const exp = await call(who, "experiments.default", undefined, { header: workspaceId });
  const experimentId = (exp.data as { id: string }).id;
  const res = await call(who, "runs.start", { experimentId, files: templateFiles(), kind: "dry-run", baseVersion: 1 }, { header: workspaceId, mutation: true });
  const out = res.data as { ok: boolean; runId?: string; error?: string };
  if (!out?.ok || !out.runId) throw new Error(`runs.start in ${workspaceId}: ${res.status} ${res.message ?? out?.error}`);
  return out.runId;
}

beforeAll(async () => {
  tdb = await createTestDb();
  await ensureDefaultWorkspace(db());
  runner = await startEnginelessRunner("confusion");
  // The engine's health as a real one reports it (memory), and why it last restarted: operator-only facts.
  const supervisor = runner.server.supervisor;
  const real = supervisor.status.bind(supervisor);
  supervisor.status = () => ({
    ...real(),
    health: {
      status: "ok",
      backend: "torch",
      device: "cpu",
      model: "SmolLM2-135M-Instruct",
      max_context_tokens: 2048,
      memory: { rss_bytes: ENGINE_SECRET_BYTES, gpu_allocated_bytes: null },
    },
    lastRestart: { at: Date.now(), reason: `engine killed by SIGKILL; last output: ${RESTART_SECRET}`, cause: "engine killed by SIGKILL, likely out of memory" },
  });
  // The instance's runner (set in the web server's environment): every workspace's runs go to it.
  await registerRunner(db(), { name: runnerName, url: runner.url, token: runner.token });

  alice = await signUp("Alice", "10.8.0.1");
  bob = await signUp("Bob", "10.8.0.2");
  carol = await signUp("Carol", "10.8.0.3");
  A = alice.own;
  B = bob.own;
  await db().membership.create({ data: { workspaceId: A, userId: carol.id, role: "viewer" } });
  await db().membership.create({ data: { workspaceId: B, userId: carol.id, role: "member" } });

  runA = await startDryRun(alice, A);
  runB = await startDryRun(bob, B);
  // Both runs reach the one runner (the dispatcher hands them over).
  const end = Date.now() + 60_000;
  for (;;) {
    const ids = runner.server.manager.status().runs.map((r) => r.run_id);
    if (ids.includes(runA) && ids.includes(runB)) break;
    if (Date.now() > end) throw new Error(`runs never reached the runner: ${ids.join(", ")}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}, 180_000);

afterAll(async () => {
  if (tdb) await dispatcherFor(db()).stop();
  await runner?.close();
  await tdb?.drop();
});

describe("finding 8: the workspace header of a cookie session", () => {
  it("naming a workspace the user is not in is 403 naming it, for createToken, experiments.create and workspace.rename; nothing changes", async () => {
    const before = await snapshot();
    const cases: [string, unknown][] = [
      ["account.createToken", { name: "sneaky" }],
      ["experiments.create", { name: "sneaky", files: templateFiles() }],
      ["workspace.rename", { name: "renamed by alice" }],
    ];
    for (const [path, input] of cases) {
      const res = await call(alice, path, input, { header: B, mutation: true });
      expect(res.status, path).toBe(403);
      expect(res.message, path).toContain(B);
      expect(res.message, path).toMatch(new RegExp(WORKSPACE_HEADER));
    }
    // A workspace that does not exist reads the same as one the user is not in.
    const none = await call(alice, "account.createToken", { name: "sneaky" }, { header: "no-such-workspace", mutation: true });
    expect(none.status).toBe(403);
    expect(none.message).toContain("no-such-workspace");
    expect(await snapshot()).toEqual(before);
  });

  it("the plain HTTP routes (exports) refuse the same header with 403", async () => {
    const res = await handleRunsTableCsv(new Request(`${ORIGIN}/api/export/runs`, { headers: { origin: ORIGIN, cookie: alice.cookie, [WORKSPACE_HEADER]: B } }), {
      db: db(),
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(B);
  });

  it("a header naming a workspace the user is in acts there; a stale workspace cookie falls back to the user's own", async () => {
    expect((await call(carol, "workspace.current", undefined, { header: B })).data).toMatchObject({ id: B, role: "member" });
    expect((await call(carol, "workspace.current", undefined, { header: A })).data).toMatchObject({ id: A, role: "viewer" });
    // The browser remembers the last workspace in a cookie; after leaving it, the user lands in their own.
    expect((await call(alice, "workspace.current", undefined, { cookieWorkspace: B })).data).toMatchObject({ id: A, role: "owner" });
  });
});

describe("finding 4: runners.status and runners.list", () => {
  type Status = {
    url: string | null;
    reachable: boolean;
    status: { runs: { run_id: string }[]; engine: { health: unknown; last_restart?: unknown } } | null;
  };

  it("a viewer sees only their workspace's runs, and neither the runner's URL nor the engine's health", async () => {
    const res = await call(carol, "runners.status", undefined, { header: A });
    expect(res.status).toBe(200);
    const s = res.data as Status;
    expect(s.reachable).toBe(true);
    expect(s.status!.runs.map((r) => r.run_id)).toEqual([runA]);
    expect(s.url).toBeNull();
    expect(s.status).not.toHaveProperty("engine_queue"); // it counts every workspace's model calls
    // How the runner shares its CPUs, but not why it fell back (that names its cgroup paths).
    expect(Object.keys((s.status as { cpu_share?: object }).cpu_share ?? { mode: "" })).toEqual(["mode"]);
    const text = JSON.stringify(res.data);
    for (const secret of [runB, runner.url, String(ENGINE_SECRET_BYTES), RESTART_SECRET]) expect(text).not.toContain(secret);
  });

  it("an admin sees the URL and the engine's health, still only their workspace's runs", async () => {
    const a = (await call(alice, "runners.status", undefined, { header: A })).data as Status;
    expect(a.url).toBe(runner.url);
    expect(JSON.stringify(a.status!.engine)).toContain(String(ENGINE_SECRET_BYTES));
    expect(a.status!.runs.map((r) => r.run_id)).toEqual([runA]);
    expect(a.status).toHaveProperty("engine_queue", { capacity: expect.any(Number), in_flight: 0, waiting: 0 });
    const b = (await call(bob, "runners.status", undefined, { header: B })).data as Status;
    expect(b.status!.runs.map((r) => r.run_id)).toEqual([runB]);
    // Carol is a member (not an admin) of B: B's run, no URL.
    const c = (await call(carol, "runners.status", undefined, { header: B })).data as Status;
    expect(c.status!.runs.map((r) => r.run_id)).toEqual([runB]);
    expect(c.url).toBeNull();
  });

  it("runners.list: URLs and error texts only for admins; running/queued count the caller's workspace only", async () => {
    await db().runner.updateMany({ where: { name: runnerName }, data: { lastError: `runner '${runnerName}' at ${runner.url} answered 500` } });
    type Row = { name: string; url: string | null; lastError: string | null; running: number; queued: number };
    const viewer = (await call(carol, "runners.list", undefined, { header: A })).data as Row[];
    const mine = viewer.find((r) => r.name === runnerName)!;
    expect(mine.url).toBeNull();
    expect(mine.lastError).toBeNull();
    expect(JSON.stringify(viewer)).not.toContain(runner.url);
    const admin = ((await call(alice, "runners.list", undefined, { header: A })).data as Row[]).find((r) => r.name === runnerName)!;
    expect(admin.url).toBe(runner.url);
    expect(admin.lastError).toContain(runner.url);
    // Only A's own runs are counted: B's run on the same runner is not A's business.
    const occupyingA = await db().run.count({ where: { workspaceId: A, status: { in: ["running", "lost", "queued"] } } });
    expect(mine.running + mine.queued).toBe(occupyingA);
  });
});

describe("issue 29, item 5: a shared runner's details are the instance operator's", () => {
  type Status = { url: string | null; status: { engine: { health: unknown }; engine_queue?: unknown } | null };
  type Row = { name: string; url: string | null; lastError: string | null; scope: string };
  type GotRun = { runner: { name: string; url: string | null } | null; checkpoints: { step: number; path: string | null }[] };
  const port = () => new URL(runner.url).port;
  const ckptPath = (run: string) => `/srv/rollbook/operator-disk/runs/${run}/checkpoints/0001`;

  beforeAll(async () => {
    // What the runner reported when it saved a checkpoint: a path on the operator's disk.
    for (const run of [runA, runB]) await db().checkpoint.create({ data: { runId: run, step: 1, path: ckptPath(run), sizeBytes: 1_000 } });
    await db().runner.updateMany({ where: { name: runnerName }, data: { lastError: `runner '${runnerName}' at ${runner.url} answered 500` } });
  });

  it("Bob owns workspace B (every sign-up owns one) and still sees neither the instance runner's URL, engine memory, queue nor error text", async () => {
    const res = await call(bob, "runners.status", undefined, { header: B });
    expect(res.status).toBe(200);
    const s = res.data as Status;
    expect(s.url).toBeNull();
    expect(s.status).not.toHaveProperty("engine_queue"); // every workspace's model calls
    expect(s.status!.engine.health).toBeNull();
    const list = (await call(bob, "runners.list", undefined, { header: B })).data as Row[];
    expect(list.find((r) => r.name === runnerName)).toMatchObject({ scope: "instance", url: null, lastError: null });
    for (const text of [JSON.stringify(res.data), JSON.stringify(list)]) {
      for (const secret of [runner.url, `:${port()}`, String(ENGINE_SECRET_BYTES), RESTART_SECRET]) expect(text).not.toContain(secret);
    }
  });

  it("runs.get: the runner's URL and the checkpoints' paths reach no viewer, member or owner but the operator", async () => {
    for (const [who, ws, run] of [[bob, B, runB], [carol, B, runB], [carol, A, runA]] as const) {
      const got = (await call(who, "runs.get", { id: run }, { header: ws })).data as GotRun;
      expect(got.runner).toEqual({ name: runnerName, url: null });
      expect(got.checkpoints).toEqual([expect.objectContaining({ step: 1, path: null })]);
      expect(JSON.stringify(got)).not.toContain(runner.url);
      expect(JSON.stringify(got)).not.toContain("/operator-disk/");
    }
    // The run page shows "runner: shared-runner" then, not "shared-runner (undefined)" (run-view.tsx reads url ?? name).
    const operator = (await call(alice, "runs.get", { id: runA }, { header: A })).data as GotRun;
    expect(operator.runner).toEqual({ name: runnerName, url: runner.url });
    expect(operator.checkpoints).toEqual([expect.objectContaining({ step: 1, path: ckptPath(runA) })]);
  });

  it("a run's events never carry a checkpoint's path: runs.events and the events route, for everyone", async () => {
    const logged = await createRunningRun(db(), B);
    await ingestEvents(db(), logged, runEvents(logged));
    const stored = await db().runEvent.findMany({ where: { runId: logged, type: "checkpoint.saved" } });
    expect(JSON.stringify(stored)).toContain("/checkpoints/"); // the stored log keeps it (run moves need it)
    const events = (await call(bob, "runs.events", { runId: logged, afterSeq: 0 }, { header: B })).data as { type: string; payload: unknown }[];
    expect(events.filter((e) => e.type === "checkpoint.saved").length).toBe(2);
    expect(JSON.stringify(events)).not.toContain("/checkpoints/");
    for (const view of ["full", "summary"]) {
      const route = await handleRunEvents(new Request(`${ORIGIN}/api/runs/${logged}/events?view=${view}`, { headers: { origin: ORIGIN, cookie: bob.cookie, [WORKSPACE_HEADER]: B } }), logged, { db: db() });
      expect(route.status).toBe(200);
      const body = await route.text();
      expect(body).toContain("checkpoint.saved");
      expect(body, view).not.toContain("/checkpoints/");
    }
  });

  it("a workspace admin sees the runners their workspace registered (URL, errors); its members do not; the operator's own workspace does not list them", async () => {
    await registerRunner(db(), { name: "bobs-gpu", url: runner.url, token: runner.token, workspaceId: B });
    await db().runner.updateMany({ where: { name: "bobs-gpu" }, data: { lastError: `runner 'bobs-gpu' at ${runner.url} answered 500` } });
    const own = ((await call(bob, "runners.list", undefined, { header: B })).data as Row[]).find((r) => r.name === "bobs-gpu");
    expect(own).toMatchObject({ scope: "workspace", url: runner.url, lastError: expect.stringContaining(runner.url) });
    const member = ((await call(carol, "runners.list", undefined, { header: B })).data as Row[]).find((r) => r.name === "bobs-gpu");
    expect(member).toMatchObject({ url: null, lastError: null });
    expect(((await call(alice, "runners.list", undefined, { header: A })).data as Row[]).map((r) => r.name)).not.toContain("bobs-gpu");
  });

  it("ROLLBOOK_OPERATOR_EMAILS names the operator: then Bob sees the instance runner as it is, and Alice (the first owner) does not", async () => {
    const saved = process.env.ROLLBOOK_OPERATOR_EMAILS;
    process.env.ROLLBOOK_OPERATOR_EMAILS = " BOB@example.com ";
    resetEnv();
    try {
      const b = (await call(bob, "runners.status", undefined, { header: B })).data as Status;
      expect(b.url).toBe(runner.url);
      expect(JSON.stringify(b.status!.engine)).toContain(String(ENGINE_SECRET_BYTES));
      expect(b.status).toHaveProperty("engine_queue");
      expect(((await call(bob, "runs.get", { id: runB }, { header: B })).data as GotRun).checkpoints[0]!.path).toBe(ckptPath(runB));
      const a = (await call(alice, "runners.status", undefined, { header: A })).data as Status;
      expect(a.url).toBeNull();
      expect(((await call(alice, "runs.get", { id: runA }, { header: A })).data as GotRun).runner).toEqual({ name: runnerName, url: null });
    } finally {
      if (saved === undefined) delete process.env.ROLLBOOK_OPERATOR_EMAILS;
      else process.env.ROLLBOOK_OPERATOR_EMAILS = saved;
      resetEnv();
    }
  });

  it("a start refused because the runner is down names the runner, not its address (a member reads the run's error)", async () => {
    const down = "down-runner";
    const downPort = String(await closedPort());
    await registerRunner(db(), { name: down, url: `http://127.0.0.1:${downPort}`, token: runner.token });
    const exp = await call(carol, "experiments.default", undefined, { header: B });
    const encoded = JSON.stringify(superjson.serialize({ experimentId: (exp.data as { id: string }).id, files: templateFiles(), kind: "dry-run", baseVersion: 1 }));
    const res = await handleTrpcRequest(
      new Request(`${ORIGIN}/api/trpc/runs.start`, { method: "POST", headers: { origin: ORIGIN, cookie: carol.cookie, [WORKSPACE_HEADER]: B, "content-type": "application/json" }, body: encoded }),
      db(),
      { runnerName: down },
    );
    const body = (await res.json()) as TrpcBody;
    const text = JSON.stringify(body);
    expect(text).toMatch(new RegExp(`runner '${down}'`));
    expect(text).toMatch(/unreachable/);
    expect(text).not.toContain(`127.0.0.1:${downPort}`);
    const failed = await db().run.findFirstOrThrow({ where: { workspaceId: B, status: "failed" }, orderBy: { createdAt: "desc" }, select: { error: true } });
    expect(failed.error).toMatch(/unreachable/);
    expect(failed.error).not.toContain(downPort);
  });
});
