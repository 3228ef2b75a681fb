/**
 * One number, one definition (issue 31), on a REAL run: the real runner (in this process) with its real engine
 * (SmolLM2-135M on CPU) trains 1 step of 2 groups × 3 (one group's rewards always tie, so it trains nothing),
 * with a KL term (trainer.beta) and 2 mini-epochs, so KL is measured and, after the first update, not 0. Then every place a user reads loss, KL or an advantage must
 * say the same number for the same name:
 *   loss, KL — the step.finished event, the run header's live line (the page's fold of the events), the charts'
 *              runs.series, the steps of runs.get (what the compare view charts), the metrics CSV export;
 *   advantage — the rollout / group panels (the page's fold of runs.events), the token view (runs.rolloutTokens:
 *              the trainer's own number and the raw one), the trajectories JSONL export — both the raw
 *              (reward − group mean) and the trained (scaled) one, each under its own name.
 * Before the fix the live line showed the last micro-batch's own loss, the panel only reward − group mean
 * while the token view showed the scaled one, and the export had no advantage at all.
 *   npx vitest run --project server features/runs/server/one-number.servertest.ts
 */
import fs from "node:fs";
import Papa from "papaparse";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { latestTrainedStep, SIGNALS, stepKl, stepLoss, type RolloutTokens, type RunEvent, type StepMetrics } from "@contracts";
import { loadEnv as loadRunnerEnv } from "@/gpu-runner/src/env";
import type { RunnerServer } from "@/gpu-runner/src/server";
import { startTestRunner, type TestRunner } from "@/gpu-runner/src/test-support/test-runner";
import { registerRunner } from "@/server/runner-client";
import { callerAs, callerFor, createTestDb, newWorkspace, templateFiles, type TestDb } from "@/server/test/harness";
import { ingestEvents } from "@/features/run-lifecycle/server";
import { ensureDefaultExperiment } from "@/features/workspace/server";
import { collectRunEvents } from "@/server/test/collect-run-events";
import { applyEvents, groupKey, initialRunState, rolloutAdvantage, runScalesRewards, type PageEvent, type RunViewState } from "@/features/run-view/components/run-state";
import { runMetricsCsv, runTrajectoriesJsonl } from "./run-export";

const TOKEN = "one-number-servertest-token-0123456789ab";
const ENGINE_PYTHON = loadRunnerEnv({ ...process.env, RUNNER_TOKEN: TOKEN }).ENGINE_PYTHON;
const engineAvailable = fs.existsSync(ENGINE_PYTHON);
if (!engineAvailable) console.warn(`one-number.servertest: skipped, no engine python at ${ENGINE_PYTHON} (npm run setup)`);

// The "flat" task ties (every reply 0.5: not trained); the other's reward is the reply's length, which 3
// samples at temperature 1 do not all share.
const TASKS = ['{"word": "apple", "flat": true}', '{"word": "river"}'].join("\n") + "\n";
const REWARD = `import type { RewardInput, RewardResult } from "rollbook";
export default function reward({ task, output }: RewardInput<{ word: string; flat?: boolean }, string>): RewardResult {
  return { reward: task.flat ? 0.5 : output.length / 10 };
}
`;
const SCENARIO = `import type { RolloutContext } from "rollbook";
export default async function rollout(ctx: RolloutContext<{ word: string }>): Promise<string> {
  return (await ctx.chat([{ role: "user", content: \`Say the word \${ctx.task.word}.\` }])).content;
}
`;
const STEPS = 1;

let tdb: TestDb;
let testRunner: TestRunner | undefined;
let runner: RunnerServer;
const db = () => tdb.handle.prisma;

async function readStream(body: ReadableStream<Uint8Array>): Promise<string> {
  return await new Response(body).text();
}

describe.skipIf(!engineAvailable)("loss, KL and advantages agree everywhere they are shown (real runner, real engine, 1 step)", () => {
  let ws: string;
  let runId: string;
  let events: RunEvent[];
  let page: RunViewState;
  let steps: StepMetrics[];

  beforeAll(async () => {
    tdb = await createTestDb();
    testRunner = await startTestRunner({ name: "one-number-servertest", token: TOKEN, engine: "shared" });
    runner = testRunner.server;
    ws = await newWorkspace(db());
    const runnerName = `one-number-${ws}`;
    await registerRunner(db(), { name: runnerName, url: runner.url, token: TOKEN });
    const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
    const files = {
      ...templateFiles({
        num_steps: STEPS,
        groups_per_step: 2,
        rollouts_per_group: 3,
        eval_every: 0,
        sampling: { temperature: 1.0, max_tokens: 10 },
        limits: { rollout_timeout_ms: 400_000 },
        trainer: { beta: 0.04, mini_epochs: 2 },
      }),
      "scenario.ts": SCENARIO,
      "reward.ts": REWARD,
      "tasks.jsonl": TASKS,
    };
    const started = await callerFor(db(), ws, runnerName).runs.start({ experimentId, files, kind: "train" });
    if (!started.ok) throw new Error(`start refused: ${started.error}`);
    runId = started.runId;
    // On a loaded machine the runner's stream can end before the run does: read it again until run.finished.
    for (let i = 0; i < 5; i++) {
      events = await collectRunEvents(runner.url, TOKEN, runId, 800_000);
      if (events.at(-1)?.type === "run.finished") break;
    }
    const end = events.at(-1);
    if (end?.type !== "run.finished" || end.payload.status !== "completed") {
      const logs = events.filter((e) => e.type === "run.log").map((e) => JSON.stringify(e.payload));
      throw new Error(`run did not complete: ${JSON.stringify(end?.payload)}\n${logs.join("\n")}\n--- engine log ---\n${testRunner.engineLogs.slice(-30).join("\n")}`);
    }
    await ingestEvents(db(), runId, events);
    // The run page's state, folded from the events as the page gets them (runs.events, served).
    const viewer = await callerAs(db(), ws, { role: "viewer" });
    page = applyEvents(initialRunState, (await viewer.runs.events({ runId, afterSeq: 0, limit: 2000 })) as PageEvent[]);
    steps = events.flatMap((e) => (e.type === "step.finished" ? [e.payload] : []));
  }, 1_500_000);

  afterAll(async () => {
    await testRunner?.close();
    await tdb?.drop();
  }, 60_000);

  it("loss and KL: the step event, the live line, the charts, runs.get's steps and the CSV say the same", async () => {
    expect(steps.map((s) => s.step)).toEqual([1]);
    for (const s of steps) expect(s.trainer).not.toBeNull();
    // KL is measured (beta > 0) and, after the first mini-epoch's update, not 0: a real number, not a default.
    expect(stepKl(steps[0]!)).toBeGreaterThan(0);

    const viewer = await callerAs(db(), ws, { role: "viewer" });
    const series = await viewer.runs.series({ runId, x: "step", width: 400 });
    const chart = (id: string) => series.charts.find((c) => c.id === id)!.series.find((s) => s.key === id)!.values;
    const run = await viewer.runs.get({ id: runId });
    const csv = Papa.parse<Record<string, string>>((await runMetricsCsv(db(), ws, runId)).body, { header: true, skipEmptyLines: true }).data;

    for (const [name, of] of [["loss", stepLoss], ["kl", stepKl]] as const) {
      const fromEvents = steps.map((s) => of(s));
      expect(chart(name), `${name}: charts`).toEqual(fromEvents);
      expect(run.steps.map((s) => of(s)), `${name}: runs.get steps`).toEqual(fromEvents);
      expect(csv.map((r) => Number(r[`trainer.${name}`])), `${name}: metrics CSV`).toEqual(fromEvents);
    }
    // The header's live line: the newest trained step's loss and KL, not a micro-batch's (train.progress).
    const live = latestTrainedStep(page.steps)!;
    expect(live).toEqual({ step: 1, loss: stepLoss(steps[0]!), kl: stepKl(steps[0]!) });
    // …which is not what train.progress carried: the last micro-batch's own loss (issue 31's 0.430 against ≈1e-6).
    const progress = events.flatMap((e) => (e.type === "train.progress" ? [e.payload.loss] : []));
    expect(progress.length).toBeGreaterThan(0);
    expect(SIGNALS.loss.label).toBe("loss");
  });

  it("advantages: the panels, the token view and the JSONL export give both, equal, under the same names", async () => {
    const viewer = await callerAs(db(), ws, { role: "viewer" });
    const scale = runScalesRewards(page);
    expect(scale).toBe(true);
    const exported = new Map(
      (await readStream((await runTrajectoriesJsonl(db(), ws, runId, { tokens: false })).body))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { id: string; advantage: number | null; trained_advantage: number | null })
        .map((t) => [t.id, t]),
    );
    const train = page.rollouts.filter((r) => r.split === "train");
    expect(train).toHaveLength(STEPS * 2 * 3);
    let trained = 0;
    for (const r of train) {
      const panel = rolloutAdvantage(r.id, page.groups[groupKey(r)], scale);
      const tokens: RolloutTokens = await viewer.runs.rolloutTokens({ runId, rolloutId: r.id });
      const flat = (r.task as { flat?: boolean }).flat === true;
      // The raw advantage: reward − group mean, the same in the panel, the token view and the export.
      expect(panel.raw, `${r.id}: raw`).toEqual(expect.any(Number));
      expect(tokens.training.raw_advantage, `${r.id}: token view raw`).toBe(panel.raw);
      expect(exported.get(r.id)!.advantage, `${r.id}: export raw`).toBe(panel.raw);
      expect(exported.get(r.id)!.trained_advantage, `${r.id}: export trained`).toBe(panel.trained);
      if (flat) {
        expect(tokens.training.status, r.id).toBe("not_trained");
        expect(panel.trained).toBe(0);
        continue;
      }
      if (tokens.training.status !== "trained") {
        // A sample whose reward is exactly its group's mean is dropped by the trainer: advantage 0.
        expect(tokens.training.status).toBe("not_trained");
        expect(panel.trained).toBe(0);
        continue;
      }
      trained++;
      // The trainer's own number (train-logprobs.jsonl) against the panel's (the trainer's arithmetic, mirrored):
      // equal up to float summation order.
      expect(panel.trained!, `${r.id}: trained`).toBeCloseTo(tokens.training.advantage!, 9);
      // Scaled by the group std: the two advantages differ, which is why both are labelled.
      const group = page.groups[groupKey(r)]!;
      expect(panel.trained!).toBeCloseTo(panel.raw! / (group.rewardStd! + 1e-6), 9);
    }
    expect(trained).toBeGreaterThan(0);
  });
});
