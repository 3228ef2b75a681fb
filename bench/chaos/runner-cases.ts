/**
 * The breaks of the runner process itself, long: a train run on the REAL runner (gpu-runner/src/server.ts as a
 * child process: its run loop, sandboxes, event log, checkpoints) started the way the app starts one (tRPC
 * runs.start, the dispatcher), ingested by a web process and followed by a page over socket.io.
 *   runner-kill — the runner SIGKILLed mid-run; once the web says "runner lost", started again (same port,
 *                 same runs folder) and the run resumed through the app's resume path (runs.resume)
 *   runner-stop — the runner SIGSTOPped for --stop-s (past RUNNER_LOST_AFTER_MS: the web marks it lost),
 *                 then SIGCONT: the run must go back to running and complete
 * The engine is a stand-in (server/test/stand-in-engine.ts: the engine's HTTP contract, paced by --chat-ms per
 * chat, checkpoints written as the engine writes them): the real SmolLM2 on 2 shared CPU cores would make a run
 * of a thousand rollouts take hours, and the engine is not what these cases break. It lives in the bench's
 * process, so it outlives the runner's kill and stop, as a separate engine process would.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { dispatcherFor } from "@/features/run-lifecycle/server";
import { ensureDefaultExperiment } from "@/features/workspace/server";
import { spawnTs, stopChild, type Child } from "../../server/test/child-process";
import { callerFor, closedPort, templateFiles } from "../../server/test/harness";
import { startStandInEngine, type StandInEngine } from "../../server/test/stand-in-engine";
import { readRunnerLog, settled, verdict, type Row } from "./verdict";
import { until, type ChaosStack } from "./stack";
import { openViewer } from "./viewer";

const NAME = "chaos-runner";
const TOKEN = "chaos-runner-token-0123456789abcdef";

export interface RunnerCaseOptions {
  steps: number;
  /** Each chat's answer waits this long (paces the run: rollouts per step / concurrency × chatMs per step). */
  chatMs: number;
}

interface RealRunner {
  child: Child;
  url: string;
  runsDir: string;
  /** Started again on the same port and runs folder (after a kill). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

async function startRealRunner(engine: StandInEngine, runsDir: string): Promise<RealRunner> {
  const port = await closedPort();
  const url = `http://127.0.0.1:${port}`;
  const spawnIt = async () => {
    const child = await spawnTs(
      "gpu-runner/src/server.ts",
      { RUNNER_PORT: String(port), RUNNER_TOKEN: TOKEN, RUNNER_NAME: NAME, ROLLBOOK_RUNS_DIR: runsDir, ENGINE_URL: engine.url, ENGINE_TOKEN: "stand-in-engine-token" },
      /^RUNNER READY \d+$/,
      180_000,
    );
    const ready = await until(
      async () => {
        const res = await fetch(`${url}/status`, { headers: { authorization: `Bearer ${TOKEN}` } }).catch(() => null);
        const body = res?.ok ? ((await res.json()) as { result?: { data?: { engine?: { state?: string } } } }) : null;
        return body?.result?.data?.engine?.state ?? null;
      },
      (s) => s === "ready",
      120_000,
      250,
    );
    if (!ready.ok) throw new Error(`runner: engine not ready (${ready.value}):\n${child.lines.slice(-20).join("\n")}`);
    return child;
  };
  const runner: RealRunner = {
    child: await spawnIt(),
    url,
    runsDir,
    async restart() {
      runner.child = await spawnIt();
    },
    async close() {
      try {
        process.kill(runner.child.proc.pid!, "SIGCONT");
      } catch {
        // gone already
      }
      await stopChild(runner.child);
    },
  };
  return runner;
}

type Break = "kill" | "stop";

/** One train run on the real runner, broken once a third of its steps are stored. */
export async function runnerBreak(stack: ChaosStack, kind: Break, opts: RunnerCaseOptions & { stopS: number }): Promise<Row> {
  const name = kind === "kill" ? `runner SIGKILL + resume (${opts.steps} steps)` : `runner SIGSTOP ${opts.stopS} s (${opts.steps} steps)`;
  const notes: string[] = [];
  const t0 = Date.now();
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-chaos-runner-"));
  const engine = await startStandInEngine({ runsDir, onChat: () => new Promise((r) => setTimeout(r, opts.chatMs)) });
  const runner = await startRealRunner(engine, runsDir);
  // The production default for "runner lost" (15 s): the case must outlast it, as a real outage would.
  const web = await stack.startWeb({ name: NAME, url: runner.url, token: TOKEN });
  const dispatcher = dispatcherFor(stack.db);
  dispatcher.start();
  try {
    const { id: experimentId } = await ensureDefaultExperiment(stack.db, stack.workspaceId);
    const api = callerFor(stack.db, stack.workspaceId, NAME);
    // Two rollouts at a time: a step's 8 rollouts finish in 4 waves, so a break can land mid-step (some of
    // the step's rollouts logged, the step not trained) — the part a resume must redo without counting twice.
    const files = templateFiles({ num_steps: opts.steps, groups_per_step: 2, rollouts_per_group: 4, max_concurrency: 2, eval_every: 0, sampling: { temperature: 1.0, max_tokens: 8 } });
    const started = await api.runs.start({ experimentId, files, kind: "train" });
    if (!started.ok) throw new Error(`start refused: ${started.error}`);
    const runId = started.runId;
    const viewer = openViewer(web.url, stack.apiToken, runId);
    const row = () => stack.db.run.findUniqueOrThrow({ where: { id: runId }, select: { status: true, currentStep: true, lastSeq: true, attempt: true, error: true } });
    const atThird = await until(row, (r) => r.currentStep >= Math.max(1, Math.floor(opts.steps / 3)) || r.status !== "running" && r.status !== "queued", 600_000, 100);
    if (atThird.value.status !== "running") throw new Error(`the run was ${atThird.value.status} before the break: ${atThird.value.error}`);
    // Mid-step: at least 3 of the next step's rollouts in the runner's log, its step.finished not yet.
    const sinceStepEnd = () => {
      const log = readRunnerLog(runsDir, runId);
      const lastEnd = log.findLastIndex((e) => e.type === "step.finished");
      return log.slice(lastEnd + 1).filter((e) => e.type === "rollout.finished").length;
    };
    const midStep = await until(sinceStepEnd, (n) => n >= 3 && n < 8, 60_000, 20);
    notes.push(midStep.ok ? `broken mid-step: ${midStep.value} of the step's 8 rollouts logged` : "could not catch the run mid-step");
    const pid = runner.child.proc.pid!;
    const broke = Date.now();
    const lost = () => until(row, (r) => r.status === "lost", 120_000, 200);

    if (kind === "kill") {
      runner.child.proc.kill("SIGKILL");
      await new Promise((r) => runner.child.proc.once("exit", r));
      const logAtKill = readRunnerLog(runsDir, runId).length;
      const l = await lost();
      notes.push(l.ok ? `"runner lost" ${((Date.now() - broke) / 1000).toFixed(1)} s after the kill (log held ${logAtKill})` : `never marked lost: ${l.value.status}`);
      await runner.restart();
      // The restarted runner no longer runs it: the web must say so (failed, or still lost) before a person
      // would press Resume. Every status the database shows meanwhile is recorded.
      const seen: string[] = [];
      const restarted = Date.now();
      const settledAfterRestart = await until(
        async () => {
          const r = await row();
          if (r.status !== seen.at(-1)) seen.push(r.status);
          return r;
        },
        (r) => r.status === "failed" || r.status === "stopped",
        120_000,
        200,
      );
      notes.push(`after the restart: ${seen.join(" → ")} (${((Date.now() - restarted) / 1000).toFixed(1)} s)${settledAfterRestart.value.error ? `: ${settledAfterRestart.value.error}` : ""}`);
      const resumed = await api.runs.resume({ id: runId });
      notes.push(`resume: ${JSON.stringify(resumed)}`);
    } else {
      process.kill(pid, "SIGSTOP");
      const l = await lost();
      notes.push(l.ok ? `"runner lost" ${((Date.now() - broke) / 1000).toFixed(1)} s after SIGSTOP` : `never marked lost: ${l.value.status}`);
      // The stop lasts stopS: the case's parameter, not a wait for something to happen.
      const left = opts.stopS * 1000 - (Date.now() - broke);
      if (left > 0) await new Promise((r) => setTimeout(r, left));
      process.kill(pid, "SIGCONT");
      const cont = Date.now();
      const back = await until(row, (r) => r.status !== "lost", 120_000, 200);
      notes.push(`after SIGCONT: ${back.value.status} in ${((Date.now() - cont) / 1000).toFixed(1)} s`);
    }

    const done = await until(row, (r) => r.status !== "running" && r.status !== "lost" && r.status !== "queued", 900_000, 250);
    const logEnded = () => readRunnerLog(runsDir, runId).at(-1)?.type === "run.finished";
    await until(logEnded, (e) => e, 60_000, 100);
    await settled(stack.db, runId, () => readRunnerLog(runsDir, runId).length, viewer);
    const steps = await stack.db.step.findMany({ where: { runId }, orderBy: { step: "asc" }, select: { step: true } });
    const checkpoints = await stack.db.checkpoint.findMany({ where: { runId }, orderBy: { step: "asc" }, select: { step: true } });
    const wanted = Array.from({ length: opts.steps }, (_, i) => i + 1).join(",");
    if (steps.map((s) => s.step).join(",") !== wanted) notes.push(`steps stored: ${steps.map((s) => s.step).join(",")}`);
    if (checkpoints.map((s) => s.step).join(",") !== wanted) notes.push(`checkpoints stored: ${checkpoints.map((s) => s.step).join(",")}`);
    notes.push(`attempt ${done.value.attempt}; ${steps.length} steps and ${checkpoints.length} checkpoints stored`);
    const result = await verdict(name, stack.db, runId, readRunnerLog(runsDir, runId), viewer, "completed", (Date.now() - t0) / 1000, notes);
    viewer.close();
    return result;
  } finally {
    await dispatcher.stop();
    await stopChild(web);
    await runner.close();
    await engine.close();
    fs.rmSync(runsDir, { recursive: true, force: true });
  }
}
