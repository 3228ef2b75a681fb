/**
 * The long chaos cases (issue 17, deliverable 6), on real processes: each breaks one thing mid-run and then
 * compares the runner's log (events.jsonl) = the database's events and trajectories = what a page following
 * the run folded (features/run-view/components/run-live.ts + run-state.ts over socket.io) — no gap, no duplicate — and checks
 * that the run's final status is the true one. The short versions are in `npm test` (server/chaos/,
 * server/realtime/delivery.servertest.ts, multi-web.servertest.ts); this is not.
 *
 *   node --no-node-snapshot --import tsx bench/chaos.ts [--quick] [--cases db-cut,db-hang,web-kill,runner-kill,runner-stop]
 *        [--reps 1] [--db-cut-s 90] [--db-hang-s 20] [--rate 20] [--web-rollouts 6000] [--web-rate 40]
 *        [--steps 150] [--chat-ms 150] [--stop-s 150]
 *
 * CHAOS_DB_CUT_S sets --db-cut-s's default. --quick shortens every case (a few seconds of break, a few hundred
 * rollouts) to try the bench out; the figures worth reporting are the full ones. Each case gets a fresh
 * database (created and dropped here). The load average is printed at the start and the end: on a shared
 * machine it says how much the timings are worth. Exits 1 when any case lost, duplicated or misreported.
 */
import { execSync } from "node:child_process";
import os from "node:os";
import { runnerBreak } from "./chaos/runner-cases";
import { startChaosStack, type ChaosStack } from "./chaos/stack";
import { dbBreak, webKill } from "./chaos/synthetic-cases";
import type { Row } from "./chaos/verdict";

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const arg = (name: string, fallback: number) => {
  const i = argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(argv[i + 1]) : fallback;
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name}: a number, got ${argv[i + 1]}`);
  return v;
};
const QUICK = flag("quick");
const ALL = ["db-cut", "db-hang", "web-kill", "runner-kill", "runner-stop"] as const;
type CaseName = (typeof ALL)[number];
const casesArg = argv.includes("--cases") ? argv[argv.indexOf("--cases") + 1]!.split(",") : [...ALL];
for (const c of casesArg) if (!(ALL as readonly string[]).includes(c)) throw new Error(`--cases: unknown case ${c} (known: ${ALL.join(", ")})`);
const CASES = casesArg as CaseName[];

const o = {
  reps: arg("reps", 1),
  dbCutS: arg("db-cut-s", Number(process.env.CHAOS_DB_CUT_S ?? (QUICK ? 8 : 90))),
  dbHangS: arg("db-hang-s", QUICK ? 5 : 20),
  rate: arg("rate", 20),
  afterS: QUICK ? 5 : 30,
  webRollouts: arg("web-rollouts", QUICK ? 600 : 6_000),
  webRate: arg("web-rate", 40),
  steps: arg("steps", QUICK ? 30 : 150),
  chatMs: arg("chat-ms", 150),
  // Past RUNNER_LOST_AFTER_MS (15 s) even when quick: the point is the lost → running way back.
  stopS: arg("stop-s", QUICK ? 25 : 150),
};

const uptime = () => execSync("uptime").toString().trim();

async function runCase(name: CaseName): Promise<Row> {
  const stack: ChaosStack = await startChaosStack();
  try {
    switch (name) {
      case "db-cut":
        return await dbBreak(stack, { mode: "cut", breakS: o.dbCutS, rate: o.rate, afterS: o.afterS });
      case "db-hang":
        return await dbBreak(stack, { mode: "hang", breakS: o.dbHangS, rate: o.rate, afterS: o.afterS });
      case "web-kill":
        return await webKill(stack, { rollouts: o.webRollouts, rate: o.webRate });
      case "runner-kill":
        return await runnerBreak(stack, "kill", { steps: o.steps, chatMs: o.chatMs, stopS: 0 });
      case "runner-stop":
        return await runnerBreak(stack, "stop", { steps: o.steps, chatMs: o.chatMs, stopS: o.stopS });
    }
  } finally {
    await stack.close();
  }
}

function table(rows: Row[]): string {
  const head = ["case", "rep", "log", "db", "page", "missing db/page", "duplicated", "final status db / page / log", "ok", "wall s"];
  const body = rows.map((r, i) => [
    r.case,
    String(reps[i]),
    String(r.log),
    String(r.db),
    String(r.page),
    `${r.missingDb} / ${r.missingPage}`,
    String(r.duplicated),
    r.status,
    r.missingDb + r.missingPage + r.duplicated === 0 && r.honest ? "yes" : "NO",
    r.wallS.toFixed(0),
  ]);
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...body.map(line)].join("\n");
}

const reps: number[] = [];

async function main(): Promise<void> {
  console.log(`chaos: cases ${CASES.join(", ")}; ${o.reps} repetition(s)${QUICK ? " (quick)" : ""}; ${JSON.stringify(o)}; ${os.cpus().length} CPUs`);
  console.log(`start: ${uptime()}`);
  const rows: Row[] = [];
  // Repetition by repetition (every case once, then again): a run cut short still has every case.
  for (let rep = 1; rep <= o.reps; rep++) {
    for (const name of CASES) {
      const t = Date.now();
      let row: Row;
      try {
        row = await runCase(name);
      } catch (e) {
        // A case that could not even be carried out says why, and the others still run.
        row = { case: name, log: 0, db: 0, page: 0, missingDb: 0, missingPage: 0, duplicated: 0, status: "—", honest: false, wallS: (Date.now() - t) / 1000, notes: [`did not complete: ${(e as Error).message.slice(0, 2_000)}`] };
      }
      rows.push(row);
      reps.push(rep);
      console.log(`\n${row.case} (rep ${rep}): log ${row.log}, db ${row.db}, page ${row.page}, missing ${row.missingDb}/${row.missingPage}, duplicated ${row.duplicated}, status ${row.status}, ${row.wallS.toFixed(0)} s — ${uptime()}`);
      for (const n of row.notes) console.log(`  - ${n}`);
    }
  }
  console.log(`\n${table(rows)}\n`);
  console.log(`end: ${uptime()}`);
  const bad = rows.filter((r) => r.missingDb + r.missingPage + r.duplicated > 0 || !r.honest);
  if (bad.length > 0) {
    console.log(`${bad.length} case(s) lost, duplicated or misreported: ${bad.map((r) => r.case).join(", ")}`);
    process.exitCode = 1;
  }
}

main()
  .catch((e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(() => setTimeout(() => process.exit(), 1_000).unref());
