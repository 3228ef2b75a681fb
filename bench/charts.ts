/**
 * Charts at 100,000 points per series:
 *
 * (a) server: runs.series' service (SQL reads of the per-step columns + M4 bucketing in TypeScript) for width
 *     800 on a fresh Postgres database seeded with one train run of STEPS Step rows (full StepMetrics with
 *     trainer metrics and checkpoint_s) and ROLLOUTS train Trajectory rows per step (each with two metrics
 *     keys) with their per-step chart rows as ingest keeps them (StepSeries): the first load (nothing
 *     cached) and a refetch (the run's columns cached) for each x mode, all charts.
 * (b) browser: uPlot in Chromium (playwright-core, /usr/bin/chromium headless, --disable-gpu: software canvas)
 *     on a static page with uPlot's own build, the same series options as components/charts/uplot-chart.tsx
 *     (a line, or a line with two filled bands = 5 series). Timed from having the data (arrays built) to
 *     uPlot's first `draw` hook, and to the next animation frame (the paint the user sees). Cases: 100,000 raw
 *     points per series, and the M4 output of (a) as the app draws it.
 *
 * Reports medians of REPS repetitions (each the median of SAMPLES samples after warm-ups) and the load average.
 *
 *   node --import tsx bench/charts.ts [--steps 100000] [--rollouts 2] [--samples 5] [--reps 3]
 *
 * Needs the Postgres at TEST_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/postgres) and Chromium
 * at CHROMIUM (default /usr/bin/chromium).
 */
import os from "node:os";
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";
import { openDatabase } from "../server/db";
import { createPgDatabase, dropPgDatabase } from "../server/db-migrate";
import { runSeries, type SeriesX } from "@/features/metrics/server";
import { forgetRunColumns } from "@/features/metrics/server";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const STEPS = arg("steps", 100_000);
const ROLLOUTS = arg("rollouts", 2);
const SAMPLES = arg("samples", 5);
const REPS = arg("reps", 3);
const WIDTH = 800;
const adminUrl = process.env.TEST_DATABASE_URL || "postgresql://postgres@127.0.0.1:5432/postgres";
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load = () => os.loadavg().map((l) => l.toFixed(2)).join(" ");

type Db = Awaited<ReturnType<typeof openDatabase>>["prisma"];

async function seedRun(db: Db): Promise<{ workspaceId: string; runId: string }> {
  const workspaceId = randomUUID();
  const runId = `${workspaceId}-run`;
  await db.$executeRaw`INSERT INTO "Workspace" ("id", "slug", "name") VALUES (${workspaceId}, ${`bench-${workspaceId.slice(0, 8)}`}, 'bench')`;
  await db.$executeRaw`INSERT INTO "Experiment" ("id", "workspaceId", "name", "updatedAt") VALUES (${workspaceId + "-e"}, ${workspaceId}, 'bench', now())`;
  await db.$executeRaw`INSERT INTO "ExperimentVersion" ("id", "experimentId", "number", "files", "filesHash") VALUES (${workspaceId + "-v"}, ${workspaceId + "-e"}, 1, '{}'::jsonb, 'h')`;
  await db.$executeRaw`INSERT INTO "Run" ("id", "number", "workspaceId", "experimentId", "versionId", "kind", "status", "config", "baseModel", "seed", "codeHash", "tasksHash", "startedAt")
    VALUES (${runId}, 1, ${workspaceId}, ${workspaceId + "-e"}, ${workspaceId + "-v"}, 'train', 'completed', '{}'::jsonb, 'SmolLM2-135M-Instruct', 1, 'c', 't',
      now() - (${STEPS}::int * interval '2 seconds'))`;
  // A learning-curve-ish reward with noise and a few spikes; trainer metrics on every step.
  await db.$executeRaw`INSERT INTO "Step" ("runId", "step", "metrics", "createdAt")
    SELECT ${runId}, g, jsonb_build_object(
        'step', g, 'reward_mean', 0.2 + 0.6 * (1 - exp(-g / 20000.0)) + 0.1 * (random() - 0.5) + CASE WHEN g % 9973 = 0 THEN 0.5 ELSE 0 END,
        'reward_std_within_group', 0.1 + 0.05 * random(), 'exception_rate', CASE WHEN random() < 0.01 THEN 0.25 ELSE 0 END,
        'groups_trainable', 4, 'rollouts', ${ROLLOUTS}::int, 'rollout_s', 1 + random(), 'train_s', 0.6 + 0.2 * random(), 'step_s', 2 + random(),
        'tokens_per_s', 300 + 50 * random(), 'judge_tokens', 0, 'judge_cost_usd', 0,
        'trainer', jsonb_build_object('loss', 0.05 * random() - 0.02, 'grad_norm', 0.5 + random(), 'kl', 0.001 * g / 1000.0 * random(),
          'clip_fraction', 0, 'entropy', 1.5 - g / 200000.0, 'probs_corr', 0.99 + 0.01 * random(), 'trained_tokens', 900,
          'groups_submitted', 4, 'groups_trainable', 4, 'skipped', false, 'duration_s', 0.6, 'checkpoint_s', 0.1 + 0.05 * random()))
      , now() - ((${STEPS}::int - g) * interval '2 seconds')
    FROM generate_series(1, ${STEPS}::int) g`;
  await db.$executeRaw`INSERT INTO "Trajectory" ("id", "runId", "seq", "step", "group", "taskIndex", "split", "task", "messages", "reward", "metrics", "model", "tokens", "timings", "logs")
    SELECT 's' || g || '-' || k, ${runId}, g * ${ROLLOUTS}::int + k, g, 0, k, 'train', '{}'::jsonb, '[]'::jsonb, random(),
      jsonb_build_object('format', random(), 'correct', (random() > 0.5)::int), 'm',
      jsonb_build_object('prompt', 40, 'completion', 20 + (random() * 60)::int), '{}'::jsonb, '[]'::jsonb
    FROM generate_series(1, ${STEPS}::int) g, generate_series(0, ${ROLLOUTS}::int - 1) k`;
  // The charts' per-step rows ingest keeps with the steps and trajectories (features/metrics/server/step-series.ts),
  // by the same SQL function, here for every step at once (ingest calls it per batch for the steps it touched).
  const t0 = performance.now();
  await db.$executeRaw`SELECT "refresh_step_series"(${runId}, ARRAY(SELECT generate_series(1, ${STEPS}::int)))`;
  console.log(`per-step chart rows of ${STEPS.toLocaleString("en-US")} steps written in ${((performance.now() - t0) / 1000).toFixed(1)} s (load ${load()})`);
  await db.$executeRawUnsafe(`ANALYZE`);
  return { workspaceId, runId };
}

async function timeServer(db: Db, workspaceId: string, runId: string) {
  // cold: the first load of the run (everything read from Postgres); warm: a refetch with the run's columns
  // cached (no new step; a live refetch adds only the new steps' rows), so bucketing all charts dominates.
  const cases: [string, SeriesX, boolean][] = [
    ["cold (first load), all charts, x = step", "step", true],
    ["warm (refetch), all charts, x = step", "step", false],
    ["warm (refetch), all charts, x = time", "time", false],
    ["warm (refetch), all charts, x = tokens", "tokens", false],
  ];
  console.log(`\n(a) runs.series service, width ${WIDTH}: ms, median of ${REPS} repetitions × ${SAMPLES} samples`);
  console.log("| case | points per series in → out (reward chart) | ms | load average (1 min) after |\n| --- | --- | --- | --- |");
  let reward: { x: number[]; series: { key: string; values: (number | null)[] }[] } | null = null;
  for (const [label, x, cold] of cases) {
    const reps: number[] = [];
    let shape = "";
    for (let r = 0; r < REPS; r++) {
      const times: number[] = [];
      for (let i = 0; i < SAMPLES + 1; i++) {
        if (cold) forgetRunColumns(runId);
        const s = performance.now();
        const res = await runSeries(db, workspaceId, { runId, x, width: WIDTH });
        if (i >= 1) times.push(performance.now() - s);
        const c = res.charts.find((ch) => ch.id === "reward")!;
        shape = `${c.total.toLocaleString("en-US")} → ${c.x.length.toLocaleString("en-US")}`;
        if (x === "step") reward = c;
      }
      reps.push(median(times));
    }
    console.log(`| ${label} | ${shape} | ${median(reps).toFixed(0)} (${reps.map((r) => r.toFixed(0)).join(" / ")}) | ${os.loadavg()[0]!.toFixed(1)} |`);
  }
  return reward!;
}

/** Runs in the page: builds the series (not timed), then times new uPlot → first draw hook → next frame. */
function drawInPage(args: { n: number; bands: boolean; given: { x: number[]; series: { key: string; values: (number | null)[] }[] } | null }) {
  type U = { destroy(): void };
  const w = window as unknown as { uPlot: new (opts: object, data: unknown[], el: HTMLElement) => U };
  let x: number[];
  const cols: (number | null)[][] = [];
  if (args.given) {
    x = args.given.x;
    const col = (k: string) => args.given!.series.find((s) => s.key === k)!.values;
    cols.push(col("max"), col("min"), col("std_hi"), col("std_lo"), col("mean"));
  } else {
    x = Array.from({ length: args.n }, (_, i) => i + 1);
    const mean = x.map((i) => 0.2 + 0.6 * (1 - Math.exp(-i / 20000)) + 0.1 * (Math.random() - 0.5));
    if (args.bands) cols.push(mean.map((m) => m + 0.3), mean.map((m) => m - 0.3), mean.map((m) => m + 0.1), mean.map((m) => m - 0.1));
    cols.push(mean);
  }
  const el = document.createElement("div");
  document.body.replaceChildren(el);
  const line = (stroke: string, width: number) => ({ stroke, width, points: { show: false }, spanGaps: true });
  const series: object[] = [{}];
  const bands: object[] = [];
  if (cols.length === 5) {
    series.push(line("#fbbf2459", 0.5), line("#fbbf2459", 0.5), line("#fbbf2459", 0.5), line("#fbbf2459", 0.5));
    bands.push({ series: [1, 2], fill: "#fbbf2414" }, { series: [3, 4], fill: "#fbbf242e" });
  }
  series.push(line("#fbbf24", 1.75));
  return new Promise<{ draw: number; frame: number }>((resolve) => {
    const t0 = performance.now();
    let draw = -1;
    const u = new w.uPlot(
      {
        width: 800,
        height: 200,
        series,
        bands,
        scales: { x: { time: false } },
        cursor: { sync: { key: "bench" } },
        legend: { live: true },
        hooks: { draw: [() => (draw < 0 ? (draw = performance.now() - t0) : 0)] },
      },
      [x, ...cols],
      el,
    );
    requestAnimationFrame(() => {
      const frame = performance.now() - t0;
      u.destroy();
      resolve({ draw, frame });
    });
  });
}

async function timeBrowser(given: Awaited<ReturnType<typeof timeServer>>) {
  const uplotJs = createRequire(import.meta.url).resolve("uplot/dist/uPlot.iife.min.js");
  const uplotCss = uplotJs.replace("uPlot.iife.min.js", "uPlot.min.css");
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1000, height: 400 } });
    await page.setContent("<!doctype html><html><body></body></html>");
    // tsx compiles named functions with an __name helper that the page does not have.
    await page.evaluate("window.__name = (f) => f");
    await page.addScriptTag({ path: uplotJs });
    await page.addStyleTag({ path: uplotCss });
    const cases: [string, Parameters<typeof drawInPage>[0]][] = [
      [`1 line, ${STEPS.toLocaleString("en-US")} raw points`, { n: STEPS, bands: false, given: null }],
      [`reward: line + ±std + min/max bands (5 series × ${STEPS.toLocaleString("en-US")} raw points)`, { n: STEPS, bands: true, given: null }],
      [`reward as the app draws it: M4 output of (a), 5 series × ${given.x.length.toLocaleString("en-US")} points`, { n: 0, bands: true, given }],
    ];
    console.log(`\n(b) uPlot in Chromium (headless, software canvas), 800 × 200 px: ms from data in hand, median of ${REPS} repetitions × ${SAMPLES} samples`);
    console.log("| case | to first draw (ms) | to next frame (ms) |\n| --- | --- | --- |");
    for (const [label, c] of cases) {
      const draws: number[] = [];
      const frames: number[] = [];
      for (let r = 0; r < REPS; r++) {
        const d: number[] = [];
        const f: number[] = [];
        for (let i = 0; i < SAMPLES + 1; i++) {
          const t = await page.evaluate(drawInPage, c);
          if (i >= 1) {
            d.push(t.draw);
            f.push(t.frame);
          }
        }
        draws.push(median(d));
        frames.push(median(f));
      }
      console.log(`| ${label} | ${median(draws).toFixed(1)} | ${median(frames).toFixed(1)} |`);
    }
  } finally {
    await browser.close();
  }
}

async function main() {
  const name = `rollbook_bench_${process.pid}_${randomUUID().slice(0, 8)}`;
  const url = await createPgDatabase(adminUrl, name);
  const handle = await openDatabase({ kind: "postgres", url });
  try {
    await handle.migrate();
    const t0 = performance.now();
    const { workspaceId, runId } = await seedRun(handle.prisma);
    console.log(`seeded ${STEPS.toLocaleString("en-US")} steps, ${(STEPS * ROLLOUTS).toLocaleString("en-US")} trajectories in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    console.log(`load average before: ${load()}  (${os.cpus().length} CPUs)`);
    const reward = await timeServer(handle.prisma, workspaceId, runId);
    await timeBrowser(reward);
    console.log(`\nload average after: ${load()}`);
  } finally {
    await handle.close();
    await dropPgDatabase(adminUrl, name);
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
