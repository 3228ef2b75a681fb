/**
 * Dispatch overhead: a run written `queued` → started on a free runner (the runner accepted it and the row
 * says `running`), through the real dispatcher (features/run-lifecycle/server/dispatcher.ts) and a REAL runner process
 * (gpu-runner/src/server.ts, engine pointed at a closed port: start answers once the run is accepted; the
 * run then waits for an engine and is stopped, untimed).
 *
 *   node --no-node-snapshot --import tsx bench/dispatch.ts [--dispatches 50] [--reps 3]
 *
 * Per repetition: `dispatches` runs one after another on an idle runner. Each is queued by the real
 * startRun (validation on the runner, version + row in one transaction), and timed from the queued row's
 * createdAt to its startedAt (both stamped on this machine). Beside it, in the same run, the peer: a full
 * check of the same files on the runner (`runner.validate`: type check, bundle, inspection), which the
 * runner's start repeats — the floor of a dispatch while it does. p50/p95 per repetition; medians over repetitions last; load printed.
 * Postgres at TEST_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/postgres), a fresh database.
 */
import { randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openDatabase } from "../server/db";
import { createPgDatabase, dropPgDatabase } from "../server/db-migrate";
import { registerRunner, resolveRunner, runnerById } from "../server/runner-client";
import { dispatcherFor } from "@/features/run-lifecycle/server";
import { startRun } from "@/features/runs/server";
import { ensureDefaultExperiment } from "@/features/workspace/server";
import { spawnTs, stopChild } from "../server/test/child-process";
import { closedPort, newWorkspace, templateFiles } from "../server/test/harness";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const DISPATCHES = arg("dispatches", 50);
const REPS = arg("reps", 3);
const adminUrl = process.env.TEST_DATABASE_URL || "postgresql://postgres@127.0.0.1:5432/postgres";
const load = () => os.loadavg().map((l) => l.toFixed(2)).join(" ");
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
const median = (xs: number[]) => pct(xs, 50);

async function main(): Promise<void> {
  console.log(`dispatch bench: ${DISPATCHES} dispatches × ${REPS} repetitions; ${os.cpus().length} CPUs; load ${load()}`);
  const name = `rollbook_bench_dispatch_${randomUUID().slice(0, 8)}`;
  const url = await createPgDatabase(adminUrl, name);
  const handle = await openDatabase({ kind: "postgres", url });
  await handle.migrate();
  const db = handle.prisma;
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-bench-dispatch-"));
  const token = randomBytes(24).toString("hex");
  const runner = await spawnTs(
    "gpu-runner/src/server.ts",
    {
      RUNNER_TOKEN: token,
      RUNNER_PORT: "0",
      RUNNER_NAME: "bench",
      RUNNER_CAPACITY: "1000",
      ROLLBOOK_RUNS_DIR: runsDir,
      ENGINE_URL: `http://127.0.0.1:${await closedPort()}`,
      ENGINE_TOKEN: "bench-engine-token-0123456789",
    },
    /RUNNER READY/,
  );
  const dispatcher = dispatcherFor(db, { log: (m) => console.warn(`[dispatch] ${m}`) });
  const results: { p50: number; p95: number; peer50: number; peer95: number }[] = [];
  try {
    const row = await registerRunner(db, { name: "bench", url: `http://127.0.0.1:${runner.port}`, token, capacity: 1000 });
    const ws = await newWorkspace(db);
    const { id: experimentId } = await ensureDefaultExperiment(db, ws);
    const files = templateFiles();
    const handleOf = () => runnerById(db, row.id);
    // Warm-up (uncounted): the runner's first type-check loads the compiler; the first queries plan.
    for (let i = 0; i < 3; i++) {
      const r = await startRun(db, ws, () => resolveRunner(db, "bench"), { experimentId, files, kind: "dry-run" });
      if (!r.ok) throw new Error(r.error);
      await dispatcher.idle();
    }
    for (let rep = 1; rep <= REPS; rep++) {
      const overhead: number[] = [];
      const peer: number[] = [];
      for (let i = 0; i < DISPATCHES; i++) {
        const r = await startRun(db, ws, () => resolveRunner(db, "bench"), { experimentId, files, kind: "dry-run" });
        if (!r.ok) throw new Error(r.error);
        await dispatcher.idle();
        const run = await db.run.findUniqueOrThrow({ where: { id: r.runId }, select: { status: true, createdAt: true, startedAt: true } });
        if (run.status !== "running" || !run.startedAt) throw new Error(`run ${r.runId} is ${run.status}, not running`);
        overhead.push(run.startedAt.getTime() - run.createdAt.getTime());
        const h = await handleOf();
        // Files the runner has not seen (a comment differs), so nothing is cached.
        const fresh = { ...files, "reward.ts": `${files["reward.ts"]}\n// peer ${randomUUID()}\n` };
        const t0 = performance.now();
        const diagnostics = await h.validate({ files: fresh, kind: "dry-run" });
        peer.push(performance.now() - t0);
        if (diagnostics.some((d) => d.severity === "error")) throw new Error("peer validate refused");
      }
      // Untimed: the runs wait for an engine that never comes; stop them so the next repetition's runner is idle.
      const h = await handleOf();
      for (const s of (await h.status()).runs.filter((x) => x.status === "running")) await h.stop(s.run_id);
      await db.run.updateMany({ where: { workspaceId: ws, status: "running" }, data: { status: "stopped", finishedAt: new Date() } });
      const res = { p50: pct(overhead, 50), p95: pct(overhead, 95), peer50: pct(peer, 50), peer95: pct(peer, 95) };
      results.push(res);
      console.log(
        `rep ${rep}: queued → started p50 ${res.p50.toFixed(0)} ms, p95 ${res.p95.toFixed(0)} ms | full check (validate) p50 ${res.peer50.toFixed(0)} ms, p95 ${res.peer95.toFixed(0)} ms | load ${load()}`,
      );
    }
    const m = (k: keyof (typeof results)[number]) => median(results.map((r) => r[k])).toFixed(0);
    console.log(`\nmedian of ${REPS}: queued → started p50 ${m("p50")} ms, p95 ${m("p95")} ms; full check (validate) p50 ${m("peer50")} ms, p95 ${m("peer95")} ms (target p50 ≤ 250 ms); load ${load()}`);
  } finally {
    await dispatcher.stop();
    await stopChild(runner);
    await handle.close();
    await dropPgDatabase(adminUrl, name).catch(() => undefined);
    fs.rmSync(runsDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
