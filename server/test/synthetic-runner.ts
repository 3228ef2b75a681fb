/**
 * A REAL runner server process (gpu-runner/src/server.ts, engine pointed at a closed port) whose runs are
 * synthetic: on command it appends rollout events to a run's event log at a fixed rate, through the same
 * EventLog the real training loop writes to, so the web server follows it exactly as it follows a real
 * run. For the delivery tests and the live-latency benchmark, where the Python engine would only add noise.
 *
 *   RUNNER_TOKEN=… ROLLBOOK_RUNS_DIR=… node --no-node-snapshot --import tsx server/test/synthetic-runner.ts
 *
 * Prints `SYNTHETIC RUNNER READY <port>`. Reads JSON commands, one a line, on stdin:
 *   {"cmd":"emit","runId":"…","count":100,"perSecond":20,"finish":true,"padEvery":0}
 *     → appends run.started (if the log is empty), `count` rollout.finished events, and run.finished if
 *       `finish`; prints `EMITTED <runId> <lastSeq>` when done. padEvery n > 0: every n-th rollout has a
 *       20,000-character completion.
 *   {"cmd":"bulk","runId":"…","rollouts":20000}
 *     → appends a whole run at once (synthetic-events.ts: step.finished every 16 rollouts), then EMITTED.
 */
import net from "node:net";
import readline from "node:readline";
import { RunConfig } from "@contracts";
import { loadEnv } from "@/gpu-runner/src/env";
import { startRunnerServer } from "@/gpu-runner/src/server";
import { syntheticRunEvents, syntheticTrajectory } from "./synthetic-events";

async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

async function main(): Promise<void> {
  const server = await startRunnerServer({
    env: loadEnv({
      ...process.env,
      RUNNER_PORT: process.env.RUNNER_PORT ?? "0",
      ENGINE_URL: `http://127.0.0.1:${await closedPort()}`,
      ENGINE_TOKEN: "synthetic-engine-token",
      RUNNER_NAME: process.env.RUNNER_NAME ?? "synthetic",
    }),
    onEngineLog: () => {},
  });
  const log = server.manager.events;
  console.log(`SYNTHETIC RUNNER READY ${server.port}`);

  const emit = async (runId: string, count: number, perSecond: number, finish: boolean, padEvery: number) => {
    log.begin(runId);
    if (log.lastSeq(runId) === 0) {
      log.append(runId, { type: "run.started", payload: { kind: "train", config: RunConfig.parse({}), model: "SmolLM2-135M-Instruct", resumed_from_step: 0 } });
    }
    const t0 = performance.now();
    for (let i = 0; i < count; i++) {
      // On a schedule, not a fixed sleep: a late tick does not slow the rate down.
      const due = t0 + (i * 1000) / perSecond;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const seq = log.lastSeq(runId);
      log.append(runId, { type: "rollout.finished", payload: syntheticTrajectory(seq, padEvery > 0 && seq % padEvery === 0 ? 20_000 : 0) });
    }
    if (finish) log.append(runId, { type: "run.finished", payload: { status: "completed", error: null, diagnostics: [] } });
    console.log(`EMITTED ${runId} ${log.lastSeq(runId)}`);
  };

  const rl = readline.createInterface({ input: process.stdin });
  rl.on("line", (line) => {
    const cmd = JSON.parse(line) as { cmd: string; runId: string; count?: number; perSecond?: number; finish?: boolean; rollouts?: number; padEvery?: number };
    if (cmd.cmd === "emit") void emit(cmd.runId, cmd.count ?? 0, cmd.perSecond ?? 20, cmd.finish ?? false, cmd.padEvery ?? 0);
    if (cmd.cmd === "bulk") {
      log.begin(cmd.runId);
      for (const e of syntheticRunEvents(cmd.rollouts ?? 0)) log.append(cmd.runId, e);
      console.log(`EMITTED ${cmd.runId} ${log.lastSeq(cmd.runId)}`);
    }
  });
  const stop = () => void server.close().then(() => process.exit(0));
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

main().catch((e: unknown) => {
  console.error("[synthetic-runner] failed:", e);
  process.exit(1);
});
