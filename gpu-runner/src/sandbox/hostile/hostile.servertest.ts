/**
 * The hostile corpus against the whole runner: a real runner server (in this process, so its memory is
 * this process's), its real engine child (CPU, SmolLM2-135M), real sandbox processes, reached over HTTP
 * through the runner's client as the web server reaches it.
 *   npx vitest run --project server gpu-runner/src/sandbox/hostile/hostile.servertest.ts
 * One dry run has a task per attack (cases.ts) and ordinary tasks in between; every ordinary rollout must
 * finish with its reward and every attack fail as the table says, while the runner answers status
 * throughout. Then the runner's and the engine's memory must be back near where they were before the
 * corpus, and a normal run must take about as long as the same run did before it.
 */
import fs from "node:fs";
import path from "node:path";
import v8 from "node:v8";
import vm from "node:vm";
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ExperimentFiles, type RunEvent, type Trajectory } from "../../../../contracts";
import type { RunnerClient } from "../../client";
import { loadEnv, REPO_ROOT } from "../../env";
import type { RunnerServer } from "../../server";
import { startTestRunner, type TestRunner } from "../../test-support/test-runner";
import { CORPUS_LIMITS, HOSTILE_CASES, corpusFiles } from "./cases";

const TOKEN = "hostile-servertest-token";
const env0 = loadEnv({ ...process.env, RUNNER_TOKEN: TOKEN });
const engineAvailable = Boolean(env0.ENGINE_URL) || fs.existsSync(env0.ENGINE_PYTHON);
if (!engineAvailable) console.warn(`hostile.servertest: skipped, no engine python at ${env0.ENGINE_PYTHON} (npm run setup)`);

/**
 * Memory tolerances, after garbage collection. The runner keeps every run's events in memory (the corpus
 * run's are ~3 MB: ~50 trajectories, one with 200 log lines of 2 KB), so its JS heap may grow 32 MB; its
 * RSS also holds pages a collected heap has not handed back, so it may grow 64 MB. Either is well under what
 * one leaked attack would hold: an isolate's heap here is 256 MB, and the 50 MB MCP argument alone is 100 MB
 * as a JavaScript string. The engine's RSS moves with the batches it served (allocator caches): 100 MB, less
 * than the buffers of the calls a leaked flood would keep. (Measured here: heap +3 MB, RSS −14 MB, engine
 * +7 MB.)
 */
const RUNNER_HEAP_SLACK = 32 * 1024 * 1024;
const RUNNER_RSS_SLACK = 64 * 1024 * 1024;
const ENGINE_RSS_SLACK = 100 * 1024 * 1024;


/** The `gc` function, without the test runner passing --expose-gc. */
function gcFunction(): () => void {
  v8.setFlagsFromString("--expose-gc");
  return vm.runInNewContext("gc") as () => void;
}

function collect(client: RunnerClient, runId: string): Promise<RunEvent[]> {
  return new Promise((resolve, reject) => {
    const events: RunEvent[] = [];
    const timer = setTimeout(() => {
      sub.unsubscribe();
      reject(new Error(`events of ${runId} did not end; got ${events.length}`));
    }, 400_000);
    const sub = client.events.subscribe(
      { run_id: runId, after_seq: 0 },
      {
        onData: (tracked) => events.push(tracked.data as RunEvent),
        onComplete: () => {
          clearTimeout(timer);
          resolve(events);
        },
        onError: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      },
    );
  });
}

const BASE_CONFIG = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "templates/say-the-word/config.json"), "utf8")) as Record<string, unknown>;

function normalRun(): ExperimentFiles {
  const dir = path.join(REPO_ROOT, "templates/say-the-word");
  const read = (f: string) => fs.readFileSync(path.join(dir, f), "utf8");
  const config = { ...BASE_CONFIG, groups_per_step: 4, rollouts_per_group: 2, max_concurrency: 8, sampling: { temperature: 1.0, max_tokens: 8 } };
  return { "scenario.ts": read("scenario.ts"), "reward.ts": read("reward.ts"), "tasks.jsonl": read("tasks.jsonl"), "config.json": JSON.stringify(config) };
}

const ORDINARY_WORDS = ["apple", "river", "candle", "stone", "cloud", "bread", "lamp", "tiger", "paper"];

function corpusRun(): { files: ExperimentFiles; tasks: number } {
  const tasks: { case: string; word: string }[] = [];
  HOSTILE_CASES.forEach((c, i) => {
    if (i % 5 === 0) tasks.push({ case: "ordinary", word: ORDINARY_WORDS[tasks.length % ORDINARY_WORDS.length]! });
    tasks.push({ case: c.case, word: "apple" });
  });
  const config = {
    ...BASE_CONFIG,
    groups_per_step: tasks.length,
    rollouts_per_group: 1,
    max_concurrency: 6,
    sampling: { temperature: 1.0, max_tokens: 8 },
    limits: { rollout_timeout_ms: CORPUS_LIMITS.rollout_timeout_ms, cpu_timeout_ms: CORPUS_LIMITS.cpu_timeout_ms, memory_mb: CORPUS_LIMITS.memory_mb },
  };
  const files = { ...corpusFiles(), "tasks.jsonl": tasks.map((t) => JSON.stringify(t)).join("\n"), "config.json": JSON.stringify(config) } as ExperimentFiles;
  return { files, tasks: tasks.length };
}

/** CPU seconds (user + system) each of this process's sandbox processes has used so far, by pid. */
function sandboxCpuSeconds(): Map<string, number> {
  const out = execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(process.pid)], { encoding: "utf8" });
  const cpu = new Map<string, number>();
  for (const line of out.split("\n").filter((l) => l.includes("--input-type=module"))) {
    const pid = line.trim().split(/\s+/)[0]!;
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      cpu.set(pid, (Number(fields[11]) + Number(fields[12])) / 100); // utime, stime in ticks
    } catch {
      // exited meanwhile
    }
  }
  return cpu;
}

describe.skipIf(!engineAvailable)("the runner under the hostile corpus (real runner, real engine, real sandbox)", () => {
  let testRunner: TestRunner | undefined;
  let runner: RunnerServer;
  let client: RunnerClient;
  const gc = gcFunction();
  const figures: Record<string, number> = {};

  const runDry = async (runId: string, files: ExperimentFiles) => {
    const t0 = performance.now();
    const started = await client.start.mutate({ run_id: runId, workspace_id: "ws-test", kind: "dry-run", files, resume: false });
    expect(started).toEqual({ ok: true, run_id: runId });
    const events = await collect(client, runId);
    const seconds = (performance.now() - t0) / 1000;
    expect(events.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed", error: null } });
    return { seconds, rollouts: events.flatMap((e) => (e.type === "rollout.finished" ? [e.payload] : [])) };
  };
  const memory = async () => {
    gc();
    await new Promise((r) => setTimeout(r, 200));
    gc();
    const m = process.memoryUsage();
    return { runner: m.rss, runnerHeap: m.heapUsed, engine: (await runner.supervisor.client.health()).memory.rss_bytes };
  };

  beforeAll(async () => {
    testRunner = await startTestRunner({ name: "hostile", token: TOKEN, engine: "shared" });
    ({ server: runner, client } = testRunner);
  }, 600_000);

  afterAll(async () => {
    console.log(`hostile.servertest figures: ${JSON.stringify(figures)}`);
    await testRunner?.close();
  }, 60_000);

  it("a normal dry run, twice: warm-up, then the baseline time and memory", async () => {
    await runDry("warm-up", normalRun());
    // The corpus is checked once beforehand, as the editor's Check button would: the TypeScript checker's
    // caches for its files are then part of the baseline, not of what the attacks are measured by.
    expect(await client.validate.mutate({ files: corpusRun().files, kind: "dry-run" })).toEqual({ ok: true, diagnostics: [] });
    const before = await runDry("normal-before", normalRun());
    expect(before.rollouts.every((t) => t.error === null && typeof t.reward === "number")).toBe(true);
    const mem = await memory();
    Object.assign(figures, { normalBeforeS: before.seconds, runnerRssBeforeMb: mem.runner / 2 ** 20, runnerHeapBeforeMb: mem.runnerHeap / 2 ** 20, engineRssBeforeMb: mem.engine / 2 ** 20 });
  }, 300_000);

  it("runs the corpus: ordinary rollouts finish, every attack fails as the table says, status answers throughout", async () => {
    const { files, tasks } = corpusRun();
    // Status polled all along: the runner's event loop must stay responsive while attacks run beside it.
    const latencies: number[] = [];
    let polling = true;
    let running = false; // start() returned: the check (a synchronous TypeScript type check) is over
    const runningLatencies: number[] = [];
    const poller = (async () => {
      while (polling) {
        const t0 = performance.now();
        const status = await client.status.query();
        latencies.push(performance.now() - t0);
        if (running) runningLatencies.push(performance.now() - t0);
        running ||= status.runs.some((r) => r.run_id === "corpus");
        expect(status.runner).toBe("hostile");
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    const corpus = await runDry("corpus", files).finally(() => {
      polling = false;
    });
    await poller;
    figures.corpusS = corpus.seconds;
    figures.statusPolls = latencies.length;
    figures.statusMaxMs = Math.round(Math.max(...latencies));
    figures.statusMaxWhileRunningMs = Math.round(Math.max(...runningLatencies));

    expect(corpus.rollouts).toHaveLength(tasks);
    const byCase = new Map<string, Trajectory[]>();
    for (const t of corpus.rollouts) {
      const c = (t.task as { case: string }).case;
      byCase.set(c, [...(byCase.get(c) ?? []), t]);
    }
    for (const t of byCase.get("ordinary") ?? []) {
      expect(t.error).toBeNull();
      expect(typeof t.reward).toBe("number");
      expect(t.tokens.completion).toBeGreaterThan(0);
    }
    expect(byCase.get("ordinary")?.length).toBeGreaterThanOrEqual(8);
    for (const c of HOSTILE_CASES) {
      const [t] = byCase.get(c.case) ?? [];
      expect(t, c.case).toBeDefined();
      if (!t) continue;
      if (c.error) {
        expect(t.error, c.case).toMatchObject({ kind: c.error.kind, message: expect.stringMatching(c.error.message) });
        expect(t.reward, c.case).toBeNull();
      } else {
        expect(t.error, c.case).toBeNull();
        expect(typeof t.reward, c.case).toBe("number");
      }
    }
    expect(runningLatencies.length).toBeGreaterThan(10);
    expect(Math.max(...latencies)).toBeLessThan(5_000);
    expect(Math.max(...runningLatencies)).toBeLessThan(2_000);
  }, 400_000);

  it("after the corpus: no sandbox still computing, a normal run as fast as before, memory near baseline", async () => {
    // Nothing left spinning: the sandbox processes still alive use (almost) no CPU over 2 s.
    const cpu0 = sandboxCpuSeconds();
    await new Promise((r) => setTimeout(r, 2_000));
    const cpu1 = sandboxCpuSeconds();
    figures.sandboxProcessesAfter = cpu1.size;
    figures.sandboxCpuAfterS = [...cpu1].reduce((sum, [pid, s]) => sum + (cpu0.has(pid) ? s - cpu0.get(pid)! : s), 0);
    expect(figures.sandboxCpuAfterS).toBeLessThan(0.5);

    const after = await runDry("normal-after", normalRun());
    figures.normalAfterS = after.seconds;
    expect(after.rollouts.every((t) => t.error === null && typeof t.reward === "number")).toBe(true);
    // Generous for a shared 2-core machine: twice the baseline plus 10 s.
    expect(after.seconds).toBeLessThan(2 * figures.normalBeforeS! + 10);

    // Measured as the baseline was: right after the same normal run (the type checker then holds the same
    // experiment's program in both measurements).
    const mem = await memory();
    Object.assign(figures, { runnerRssAfterMb: mem.runner / 2 ** 20, runnerHeapAfterMb: mem.runnerHeap / 2 ** 20, engineRssAfterMb: mem.engine / 2 ** 20 });
    expect(mem.runnerHeap).toBeLessThan(figures.runnerHeapBeforeMb! * 2 ** 20 + RUNNER_HEAP_SLACK);
    expect(mem.runner).toBeLessThan(figures.runnerRssBeforeMb! * 2 ** 20 + RUNNER_RSS_SLACK);
    expect(mem.engine).toBeLessThan(figures.engineRssBeforeMb! * 2 ** 20 + ENGINE_RSS_SLACK);
  }, 300_000);

  it("refuses to start an experiment whose top level crashes V8, with a diagnostic, and keeps serving", async () => {
    const { files } = corpusRun();
    const crashing = { ...files, "lib/top-level.ts": `let s = "xy";\nfor (let i = 0; i < 27; i++) s = s + s;\nexport const topLevelFindings = s.split("").length;\n` };
    const refused = await client.start.mutate({ run_id: "top-level-crash", workspace_id: "ws-test", kind: "dry-run", files: crashing as ExperimentFiles, resume: false });
    expect(refused).toMatchObject({ ok: false, diagnostics: [expect.objectContaining({ message: expect.stringMatching(/^the experiment failed to load: out of memory: V8 ended the sandbox process/) })] });
    const status = await client.status.query();
    expect(status.engine.state).toBe("ready");
    expect(status.runs.some((r) => r.run_id === "top-level-crash")).toBe(false);
  }, 120_000);
});
