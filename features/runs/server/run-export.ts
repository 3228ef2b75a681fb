/**
 * Exports (served by features/runs/server/export-http.ts): a run's step metrics as CSV, its trajectories as JSONL, the
 * workspace's runs table as CSV. Every read is scoped to the workspace; another workspace's run is "not
 * found". CSV is written by papaparse's unparse with escapeFormulae, so a note or tag starting with "=" or
 * "+" opens in a spreadsheet as text, not as a formula. The JSONL and the runs CSV are produced a page at a
 * time from the database (a ReadableStream), so a run with 100,000 rollouts is never held in memory whole.
 */
import Papa from "papaparse";
import { EvalMetrics, StepMetrics, withAdvantages } from "@contracts";
import { AppError } from "@/server/errors";
import { rowToTrajectory } from "@/server/run-convert";
import { fetchTokenLog } from "@/features/token-view/server";
import { listRunsTable, runsFacets } from "./runs-table";
import { frozenScaleRewards, runAdvantages } from "@/server/run-advantages";
import type { RunsListInput } from "../runs-table-query";
import type { DbOrTx } from "@/server/db-types";

const csv = (fields: string[], data: unknown[][], header = true) => Papa.unparse({ fields, data }, { header, escapeFormulae: true, newline: "\r\n" });

async function findRun(db: DbOrTx, workspaceId: string, runId: string) {
  const run = await db.run.findFirst({ where: { id: runId, workspaceId }, select: { id: true, number: true } });
  if (!run) throw new AppError("NOT_FOUND", `run ${runId} not found`);
  return run;
}

/** Flat numeric (and boolean) columns of one metrics object; nested objects as `<key>.<field>`. */
function flatten(obj: Record<string, unknown>, prefix = "", out: Record<string, number | boolean> = {}) {
  for (const [k, v] of Object.entries(obj)) {
    if (typeof v === "number" || typeof v === "boolean") out[prefix + k] = v;
    else if (v && typeof v === "object" && !Array.isArray(v)) flatten(v as Record<string, unknown>, `${prefix}${k}.`, out);
  }
  return out;
}

/**
 * One row per step (a column per metric, the trainer's as trainer.*), with the evals made at that step as
 * eval_* columns (an eval at a step no training step reached gets a row of its own).
 */
export async function runMetricsCsv(db: DbOrTx, workspaceId: string, runId: string): Promise<{ filename: string; body: string }> {
  const run = await findRun(db, workspaceId, runId);
  const [steps, evals] = await Promise.all([
    db.step.findMany({ where: { runId }, orderBy: { step: "asc" }, select: { step: true, metrics: true } }),
    db.runEvent.findMany({ where: { runId, type: "eval.finished" }, orderBy: { seq: "asc" }, select: { payload: true } }),
  ]);
  const rows = new Map<number, Record<string, number | boolean>>();
  for (const s of steps) {
    const parsed = StepMetrics.safeParse(s.metrics);
    rows.set(s.step, { ...flatten(parsed.success ? parsed.data : ((s.metrics ?? {}) as Record<string, unknown>)), step: s.step });
  }
  for (const e of evals) {
    const parsed = EvalMetrics.safeParse(e.payload);
    if (!parsed.success) continue;
    const { step, model: _model, ...rest } = parsed.data;
    const row = rows.get(step) ?? { step };
    for (const [k, v] of Object.entries(flatten(rest))) row[`eval_${k}`] = v;
    rows.set(step, row);
  }
  const ordered = [...rows.values()].sort((a, b) => Number(a.step) - Number(b.step));
  const fields = ["step"];
  for (const r of ordered) for (const k of Object.keys(r)) if (!fields.includes(k)) fields.push(k);
  // Eval columns after the training ones, whichever came first.
  fields.sort((a, b) => Number(a.startsWith("eval_")) - Number(b.startsWith("eval_")));
  return { filename: `run-${run.number}-metrics.csv`, body: csv(fields, ordered.map((r) => fields.map((f) => r[f] ?? ""))) };
}

const encoder = new TextEncoder();
export const TRAJECTORY_PAGE = 200;

/**
 * The run's finished rollouts in seq order, one JSON object per line, paged from the database as the
 * client reads (pull), so memory stays at one page. `tokens`: also each rollout's exact token sequences
 * (`tokens.sequences`: [{ tokens, mask (1 = sampled), logprobs }], what training saw), fetched once from the
 * run's runner (features/token-view/server/run-token-log.ts; null for a rollout it has none of); without it only the
 * token counts are written, which keeps the file a fraction of the size. Each line also has `advantage`
 * (reward − group mean) and `trained_advantage` (what the trainer used), null where the rollout did not train.
 */
export async function runTrajectoriesJsonl(
  db: DbOrTx,
  workspaceId: string,
  runId: string,
  opts: { tokens: boolean; split?: "train" | "val"; step?: number },
): Promise<{ filename: string; body: ReadableStream<Uint8Array> }> {
  const run = await findRun(db, workspaceId, runId);
  // Both advantages of each train rollout, as the run page's panels show them (contracts/signals.ts): read
  // up front, since a page of rows may cut a group in two.
  const { config } = await db.run.findUniqueOrThrow({ where: { id: run.id }, select: { config: true } });
  const advantages = await runAdvantages(db, run.id, frozenScaleRewards(config), opts.step !== undefined ? { step: opts.step } : {});
  const sequences = opts.tokens
    ? await fetchTokenLog(db, (await db.run.findUniqueOrThrow({ where: { id: run.id }, select: { id: true, number: true, runnerId: true } })))
    : null;
  let after = 0;
  let done = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (done) return;
      const rows = await db.trajectory.findMany({
        where: { runId, seq: { gt: after }, ...(opts.split ? { split: opts.split } : {}), ...(opts.step !== undefined ? { step: opts.step } : {}) },
        orderBy: { seq: "asc" },
        take: TRAJECTORY_PAGE,
      });
      if (rows.length > 0) {
        after = rows[rows.length - 1]!.seq;
        const lines = rows.map((r) => {
          const { seq, ...t } = rowToTrajectory(r);
          const stored = (r.tokens ?? {}) as Record<string, unknown>;
          const counts = { prompt: stored.prompt, completion: stored.completion };
          const tokens = sequences ? { ...counts, sequences: sequences.get(r.id) ?? null } : counts;
          const line = withAdvantages({ run_id: run.id, run_number: run.number, seq, ...t, tokens }, advantages.get(r.id) ?? { raw: null, trained: null });
          return `${JSON.stringify(line)}\n`;
        });
        controller.enqueue(encoder.encode(lines.join("")));
      }
      if (rows.length < TRAJECTORY_PAGE) {
        done = true;
        controller.close();
      }
    },
  });
  const suffix = opts.tokens ? "-with-tokens" : "";
  return { filename: `run-${run.number}-trajectories${suffix}.jsonl`, body };
}

const RUN_FIELDS = [
  "number",
  "id",
  "experiment",
  "version",
  "kind",
  "status",
  "author",
  "base_model",
  "tags",
  "notes",
  "created_at",
  "started_at",
  "finished_at",
  "step",
  "rollouts",
  "errors",
  "reward_mean_overall",
  "error",
] as const;
export const RUNS_EXPORT_PAGE = 200; // runs.list's largest page

/**
 * The runs table as CSV, with the same filters and order as the page (`input` is what the page would send
 * to runs.list), every page of it: the run's columns, then one column per summary metric of the workspace.
 */
export async function runsTableCsv(
  db: DbOrTx,
  workspaceId: string,
  input: Omit<RunsListInput, "limit" | "cursor">,
  pageSize = RUNS_EXPORT_PAGE,
): Promise<ReadableStream<Uint8Array>> {
  const { metrics } = await runsFacets(db, workspaceId);
  const fields = [...RUN_FIELDS, ...metrics.map((m) => `summary.${m}`)];
  // Checked before the first byte, so a bad filter is a 400 rather than a broken download.
  const first = await listRunsTable(db, workspaceId, { ...input, limit: pageSize });
  let page: typeof first | null = first;
  let header = true;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!page) return controller.close();
      const data = page.items.map((r) => [
        r.number,
        r.id,
        r.experimentName,
        r.versionNumber,
        r.kind,
        r.status,
        r.createdBy ? `${r.createdBy.name} <${r.createdBy.email}>` : "",
        r.baseModel,
        r.tags.join("; "),
        r.notes,
        r.createdAt.toISOString(),
        r.startedAt?.toISOString() ?? "",
        r.finishedAt?.toISOString() ?? "",
        r.currentStep,
        r.rolloutCount,
        r.errorCount,
        r.rewardMean ?? "",
        r.error ?? "",
        ...metrics.map((m) => r.summary[m] ?? ""),
      ]);
      if (header || data.length > 0) controller.enqueue(encoder.encode(csv(fields, data, header) + "\r\n"));
      header = false;
      page = page.nextCursor ? await listRunsTable(db, workspaceId, { ...input, limit: pageSize, cursor: page.nextCursor }) : null;
      if (!page) controller.close();
    },
  });
}
