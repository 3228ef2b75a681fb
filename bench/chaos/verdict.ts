/**
 * A chaos case's verdict: the runner's log (runs/<run>/events.jsonl, every whole line), the database (RunEvent
 * rows, Trajectory rows, the Run row) and what the page folded must agree — every seq once, every rollout once
 * — and the final status must be the one expected, in the database, on the page and in the log's last
 * run.finished. Counts, not asserts: a bench reports the failing figure instead of stopping at it.
 */
import fs from "node:fs";
import path from "node:path";
import type { RunEvent, RunStatus } from "@contracts";
import type { Prisma } from "./stack";
import type { Viewer } from "./viewer";

export interface Row {
  case: string;
  /** Lines in the runner's log; its seqs must be 1..n. */
  log: number;
  db: number;
  page: number;
  /** Log seqs (and rollout ids) the database / the page lacks. */
  missingDb: number;
  missingPage: number;
  /** Seqs or rollout ids held twice, or held but not in the runner's log. */
  duplicated: number;
  /** Database / page / log's last run.finished. */
  status: string;
  honest: boolean;
  wallS: number;
  notes: string[];
}

/** Every whole line of the run's log (a line being written is not one yet). */
export function readRunnerLog(runsDir: string, runId: string): RunEvent[] {
  const file = path.join(runsDir, runId, "events.jsonl");
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .flatMap((l) => {
      try {
        return l ? [JSON.parse(l) as RunEvent] : [];
      } catch {
        return [];
      }
    });
}

const dupes = (xs: readonly (string | number)[]) => xs.length - new Set(xs).size;
const lacking = <T>(want: Iterable<T>, have: ReadonlySet<T>) => [...want].filter((x) => !have.has(x)).length;

export async function verdict(
  name: string,
  db: Prisma,
  runId: string,
  log: readonly RunEvent[],
  viewer: Viewer,
  expected: RunStatus,
  wallS: number,
  notes: string[],
): Promise<Row> {
  const logSeqs = log.map((e) => e.seq);
  const gapless = logSeqs.every((s, i) => s === i + 1);
  if (!gapless) notes.push(`the runner's own log is not 1..${log.length}`);
  // A rollout redone after a resume is logged again with the same id; the latest attempt is the one kept.
  const logRolloutList = log.flatMap((e) => (e.type === "rollout.finished" ? [e.payload.id] : []));
  const logRollouts = new Set(logRolloutList);
  const redone = dupes(logRolloutList);
  if (redone > 0) notes.push(`${redone} rollout ids logged twice (a step redone after the resume): ${logRollouts.size} rollouts to store once`);

  const stored = await db.runEvent.findMany({ where: { runId }, orderBy: { seq: "asc" }, select: { seq: true, type: true } });
  const trajectories = (await db.trajectory.findMany({ where: { runId }, select: { id: true } })).map((t) => t.id);
  const run = await db.run.findUniqueOrThrow({ where: { id: runId }, select: { status: true, lastSeq: true, error: true } });
  const page = viewer.state();
  const pageSeqs = [...page.seen];
  const pageRollouts = page.rollouts.map((r) => r.id);

  const logSet = new Set(logSeqs);
  const dbSeqs = new Set(stored.map((e) => e.seq));
  const missingDb = lacking(logSeqs, dbSeqs) + lacking(logRollouts, new Set(trajectories));
  const missingPage = lacking(logSeqs, page.seen) + lacking(logRollouts, new Set(pageRollouts));
  const notInLog = (xs: Iterable<number>) => [...xs].filter((s) => !logSet.has(s)).length;
  const duplicated =
    dupes(stored.map((e) => e.seq)) +
    notInLog(dbSeqs) +
    dupes(trajectories) +
    trajectories.filter((id) => !logRollouts.has(id)).length +
    notInLog(page.seen) +
    dupes(pageRollouts) +
    pageRollouts.filter((id) => !logRollouts.has(id)).length;
  // The same type at the same seq: a database that holds seq n must hold the runner's event n.
  const byLog = new Map(log.map((e) => [e.seq, e.type]));
  const wrongType = stored.filter((e) => byLog.has(e.seq) && byLog.get(e.seq) !== e.type).length;
  if (wrongType > 0) notes.push(`${wrongType} stored events differ in type from the runner's at the same seq`);
  if (run.lastSeq !== log.length) notes.push(`Run.lastSeq ${run.lastSeq} ≠ the log's ${log.length}`);

  const lastEnd = [...log].reverse().find((e) => e.type === "run.finished");
  const logStatus = lastEnd?.type === "run.finished" ? lastEnd.payload.status : "none";
  const honest = run.status === expected && page.status === expected && logStatus === expected;
  if (run.error) notes.push(`error: ${run.error}`);
  const counts = new Map<number, number>();
  for (const s of viewer.arrived) counts.set(s, (counts.get(s) ?? 0) + 1);
  const twice = [...counts].filter(([, n]) => n > 1).map(([s]) => s);
  if (twice.length > 0) {
    // The subscribe protocol joins the room before reading the stored tail, so a few events can come both ways.
    notes.push(`${twice.length} seqs arrived more than once on the socket (seq ${Math.min(...twice)}..${Math.max(...twice)}; folded once)`);
  }
  if (pageSeqs.length !== page.contiguousSeq) notes.push(`page holds ${pageSeqs.length} seqs but is gap-free only to ${page.contiguousSeq}`);
  if (viewer.connects() > 1) notes.push(`the page's socket connected ${viewer.connects()} times`);
  notes.push(`page statuses: ${viewer.statuses.join(" → ") || "none"}`);

  return {
    case: name,
    log: log.length,
    db: stored.length,
    page: pageSeqs.length,
    missingDb,
    missingPage,
    duplicated: duplicated + wrongType,
    status: `${run.status} / ${page.status ?? "none"} / ${logStatus}`,
    honest,
    wallS,
    notes,
  };
}

/** Waits for the three views to settle: the database holds the whole log and a terminal status, and the page shows both. */
export async function settled(db: Prisma, runId: string, logLength: () => number, viewer: Viewer): Promise<boolean> {
  const terminal = (s: RunStatus | null) => s === "completed" || s === "failed" || s === "stopped";
  const end = Date.now() + 180_000;
  for (;;) {
    const run = await db.run.findUniqueOrThrow({ where: { id: runId }, select: { status: true, lastSeq: true } });
    const page = viewer.state();
    const n = logLength();
    if (run.lastSeq === n && terminal(run.status) && page.contiguousSeq === n && terminal(page.status)) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 250));
  }
}
