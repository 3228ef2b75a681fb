/**
 * The runner's registry of runs: validates and starts them, stops them, reports their status, and owns
 * their event logs. One process, many runs; a failing run never takes the runner down.
 *
 * A run's events reach its log through one door (appendFor). When a line cannot be written (a full disk:
 * the log cuts it back, events/event-log.ts), the run fails with the reason ("disk full on runner gpu-1:
 * …"), its rollouts in flight are aborted and nothing more of it is written; its run.finished waits until
 * the disk takes writes again (events/disk-health.ts) — meanwhile status() reports the run failed with that
 * reason, which is how the web server learns it — and new runs are refused with the reason.
 */
import type { z } from "zod";
import {
  type Diagnostic,
  type ExperimentFiles,
  type RescoreRequest,
  type RescoreResponse,
  type RunKind,
  type RunnerStatus,
  RunSpec,
  type RunStatus,
  type StartResult,
  type ExternalTrainLine,
  type ExternalTrainRequest,
  formatZodIssues,
  resolveMcpConfig,
  SecretMask,
} from "../../../contracts";
import { setMaxListeners } from "node:events";
import { configSourcePath, findKeyOffset, offsetToPosition } from "../../../contracts";
import { validateExperiment } from "../experiment/validate";
import { rescoreTrajectories } from "../rescore/rescore";
import { createJudgeClient, judgeConfigProblem } from "../judge/judge-client";
import { REPO_ROOT } from "../env";
import { connectRunMcp } from "../mcp/run-connection";
import type { StdioSandboxSettings } from "../mcp/sandbox";
import { configEgressProblems } from "../net/config-egress";
import { type EgressAllow, NO_EGRESS_EXCEPTIONS } from "../net/egress-policy";
import { type EventLog, type RunEventInput, LogBehindError, LogDamagedError, LogWriteError, assertSafeRunId } from "../events/event-log";
import { DiskHealth } from "../events/disk-health";
import { DISK_FULL_TEXT, diskFailureReason, writeFailureReason } from "../events/write-failure";
import { appendTokenLine } from "../events/token-log";
import { appendTrainLogprobs, trainLogprobLines } from "../events/train-logprob-log";
import { initFromProblem } from "./init-from";
import { modelRefProblem, recordRunWorkspace, RunOwnerConflict, runWorkspace } from "./run-owner";
import { executeRun, type RunEngine } from "./run-loop";
import { externalTrain } from "./external-train";
import { queuedChat } from "../engine/queued-chat";
import type { EngineClient } from "../engine/client";
import type { EngineWatch } from "../engine/restart-recovery";
import { publishCheckpoint } from "./shared-checkpoints";
import type { FairQueue } from "../engine/fair-queue";

export interface EngineAccess {
  /**
   * tokenize: absent in unit tests' fakes (they train nothing from outside). forWorkspace: the engine acting
   * for a run's workspace (its checkpoints only: the engine's own check); absent in fakes, which hold one.
   */
  engine: RunEngine & Partial<Pick<EngineClient, "tokenize" | "forWorkspace">>;
  /** The fair queue every run's model calls wait in for an engine slot (absent: straight to the engine). */
  slots?: FairQueue;
  /** Resolves when the engine serves; rejects when it failed for good. */
  waitReady: (signal: AbortSignal) => Promise<void>;
  status: () => RunnerStatus["engine"];
  /** The supervisor's restarts, for runs to survive one (absent: an engine nobody restarts, as in unit tests). */
  watch?: EngineWatch;
}

interface ActiveRun {
  controller: AbortController;
  done: Promise<void>;
  step: number;
  /** RunSpec.attempt: a stop aimed at another attempt (an older one, stopped late) leaves this one alone. */
  attempt: number;
}

/** How a run ended when its run.finished could not be written (yet). */
type UnloggedEnd = Extract<RunEventInput, { type: "run.finished" }>["payload"];

/** Thrown into a run whose event could not be written: it ends failed with `reason`, nothing more is written. */
export class RunWriteFailed extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = "RunWriteFailed";
  }
}

export interface RunManagerOptions {
  /** How often a runner that could not write tries a test write (default 2 s). */
  diskRetryMs?: number;
}

export interface ValidateResult {
  ok: boolean;
  diagnostics: Diagnostic[];
}

/**
 * 1-based position of a config key (line 1 when absent: the default applies). A server pasted as
 * `mcpServers.<name>` is found there, not under the `mcp.servers` it became.
 */
function keyPosition(text: string, path: readonly string[]): { line: number; column: number } {
  const offset = findKeyOffset(text, configSourcePath(text, path));
  return offset === undefined ? { line: 1, column: 1 } : offsetToPosition(text, offset);
}

export interface RunnerMcpSettings {
  /** MCP_ALLOW_STDIO: whether registered stdio servers start at all. */
  allowStdio: boolean;
  /** Where they run (mcp/sandbox.ts): the operator's network and read-path choices. */
  sandbox: StdioSandboxSettings;
}

export class RunManager {
  private active = new Map<string, ActiveRun>();
  /** Runs whose externally sampled step (an ART training job) is training now: one at a time per run. */
  private externalSteps = new Set<string>();
  private starting = new Set<string>();
  /** Runs an event of which could not be written: why (nothing more of them is written until they end). */
  private writeFailed = new Map<string, string>();
  /** Runs that ended while their run.finished could not be written: written once the disk takes writes. */
  private unloggedEnds = new Map<string, UnloggedEnd>();
  private readonly disk: DiskHealth;

  constructor(
    readonly events: EventLog,
    private readonly engine: EngineAccess,
    readonly runnerName: string,
    /** How this runner starts registered stdio MCP servers (allowed at all, and the sandbox's settings). */
    private readonly mcp: RunnerMcpSettings = { allowStdio: true, sandbox: { allowNetwork: false, readPaths: [], repoRoot: REPO_ROOT } },
    /** ROLLBOOK_SHARED_CHECKPOINT_DIR: every checkpoint is copied there as soon as it is saved. */
    private readonly sharedCheckpointDir?: string,
    /** EGRESS_ALLOW: internal addresses judges and http/sse MCP servers may be at (none by default). */
    private readonly egress: EgressAllow = NO_EGRESS_EXCEPTIONS,
    options: RunManagerOptions = {},
  ) {
    this.disk = new DiskHealth(events.runsDir, () => this.writeUnloggedEnds(), options.diskRetryMs);
  }

  /**
   * Appends one of the run's events: the only way this manager writes to a run's log. A run whose write
   * failed writes nothing more (its end waits in unloggedEnds); a failed write fails the run (RunWriteFailed
   * is thrown, its controller aborted) and the runner's disk health.
   */
  private appendFor(runId: string, input: RunEventInput, controller?: AbortController): void {
    let event = input;
    const failed = this.writeFailed.get(runId);
    if (failed !== undefined) {
      if (event.type !== "run.finished") throw new RunWriteFailed(failed);
      // The run loop reports an aborted run as stopped; it failed, for this reason.
      return this.endUnlogged(runId, { status: "failed", error: failed, diagnostics: [] });
    }
    if (event.type === "run.finished") event = { ...event, payload: this.honestEnd(event.payload) };
    try {
      this.events.append(runId, event);
    } catch (err) {
      // A full disk (the line was cut back), or a log that must not be appended to (damaged inside, behind
      // what the web server stored): the run cannot record anything more.
      if (!(err instanceof LogWriteError || err instanceof LogDamagedError || err instanceof LogBehindError)) throw err;
      const reason = err instanceof LogWriteError ? writeFailureReason(this.runnerName, err) : err.message;
      if (err instanceof LogWriteError) this.disk.fail(diskFailureReason(this.runnerName, err));
      if (event.type === "run.finished") {
        // A run that completed but cannot say so has not finished its record: failed (a resume completes it).
        const { status, error } = event.payload;
        return this.endUnlogged(runId, { status: "failed", error: status === "failed" && error ? `${error}; ${reason}` : reason, diagnostics: event.payload.diagnostics });
      }
      this.writeFailed.set(runId, reason);
      controller?.abort(new RunWriteFailed(reason));
      throw new RunWriteFailed(reason);
    }
  }

  /**
   * A run failed because the engine could not save its checkpoint on a full disk: the runner says so as its
   * own reason (its runs folder is the engine's: the same disk) and refuses new runs until a test write passes.
   */
  private honestEnd(payload: UnloggedEnd): UnloggedEnd {
    if (payload.status !== "failed" || !payload.error || !/^training step \d+ failed: /.test(payload.error) || !DISK_FULL_TEXT.test(payload.error)) return payload;
    const prefix = `disk full on runner ${this.runnerName}: `;
    const error = payload.error.startsWith(prefix) ? payload.error : prefix + payload.error;
    this.disk.fail(`${prefix}the engine could not save a checkpoint`);
    return { ...payload, error };
  }

  private endUnlogged(runId: string, payload: UnloggedEnd): void {
    this.unloggedEnds.set(runId, payload);
    this.events.endUnlogged(runId);
    process.stderr.write(`run ${runId}: ended ${payload.status} (${payload.error ?? "no error"}); its run.finished is written once the disk takes writes\n`);
  }

  /** The disk takes writes again: write the run.finished of runs that ended meanwhile. False if one still fails. */
  private writeUnloggedEnds(): boolean {
    for (const [runId, payload] of [...this.unloggedEnds]) {
      if (this.active.has(runId) || this.starting.has(runId)) continue;
      try {
        this.events.append(runId, { type: "run.finished", payload });
      } catch (err) {
        if (err instanceof LogWriteError) return false;
        // A log that cannot take it for another reason (damaged, behind the web server): status() keeps reporting it.
        process.stderr.write(`run ${runId}: its run.finished cannot be written: ${(err as Error).message}\n`);
        continue;
      }
      this.unloggedEnds.delete(runId);
      this.writeFailed.delete(runId);
    }
    return true;
  }

  /** Try a test write now (a start does too; a timer does every few seconds): true when writes succeed. */
  checkDisk(): boolean {
    return this.disk.retry();
  }

  /**
   * Close logs of runs that were in progress when a previous runner process died: they get a
   * run.finished "failed" so subscribers end and the web tier sees the truth. Call once at start.
   */
  recoverInterrupted(): string[] {
    const recovered: string[] = [];
    for (const runId of this.events.listStored()) {
      if (this.active.has(runId) || this.events.isFinished(runId) || this.events.lastSeq(runId) === 0) continue;
      // Where it cannot be written (a full disk, a damaged log) status() reports it until it can.
      this.appendFor(runId, { type: "run.finished", payload: { status: "failed", error: "the runner restarted while this run was in progress", diagnostics: [] } });
      recovered.push(runId);
    }
    return recovered;
  }

  /** The engine as a run of `workspace` reaches it: the engine serves it that workspace's checkpoints only. */
  private engineFor(workspace: string): EngineAccess["engine"] {
    const engine = this.engine.engine;
    return engine.forWorkspace ? engine.forWorkspace(workspace) : engine;
  }

  async validate(files: ExperimentFiles, kind: RunKind): Promise<ValidateResult> {
    const result = await validateExperiment(files, kind);
    return { ok: result.ok, diagnostics: result.diagnostics };
  }

  /** Run (edited) reward code over stored trajectories: no run, no event log, no sampling (rescore/rescore.ts). */
  rescore(request: z.input<typeof RescoreRequest>, signal?: AbortSignal): Promise<RescoreResponse> {
    return rescoreTrajectories(request, { engine: this.engineFor(request.workspace_id), runsDir: this.events.runsDir, egress: this.egress }, signal);
  }

  async start(input: z.input<typeof RunSpec>): Promise<StartResult> {
    const refuse = (error: string, diagnostics: Diagnostic[] = []): StartResult => ({ ok: false, error, diagnostics });
    const parsedSpec = RunSpec.safeParse(input);
    if (!parsedSpec.success) return refuse(`invalid run spec: ${formatZodIssues(parsedSpec.error).join("; ")}`);
    const spec = parsedSpec.data;
    try {
      assertSafeRunId(spec.run_id);
    } catch (err) {
      return refuse((err as Error).message);
    }
    const runId = spec.run_id;
    if (this.active.has(runId) || this.starting.has(runId)) return refuse(`run ${runId} is already running`);
    // A run id never changes workspace: checked first, so nothing else about another workspace's run is said.
    const owner = runWorkspace(this.events.runsDir, runId);
    if (owner !== null && owner !== spec.workspace_id) return refuse(`run ${runId} belongs to another workspace on this runner`);
    // What the web server stored is never numbered over: a log that ends earlier is refused until it is handed back.
    if (spec.resume && spec.last_seq !== undefined) this.events.noteHeldElsewhere(runId, spec.last_seq);
    const logProblem = this.events.problem(runId);
    if (logProblem) return refuse(logProblem);
    if (this.events.exists(runId)) {
      if (!spec.resume) return refuse(`run ${runId} already exists: pass resume=true to continue it, or use a new id`);
      if (spec.kind !== "train") return refuse(`only train runs can be resumed (${runId} is ${spec.kind})`);
      // Each resume is a new attempt: one its log has already seen would mix two attempts' events.
      const logged = this.events.attemptOf(runId);
      if (spec.attempt <= logged) return refuse(`attempt ${spec.attempt} of run ${runId} is not newer than its log's attempt ${logged}`);
    }
    const unavailable = (error: string): StartResult => ({ ok: false, error, diagnostics: [], runner_unavailable: true });
    if (this.engine.status().state === "failed") return unavailable("the engine has failed; see the runner's status");
    this.starting.add(runId);
    try {
      // Starting marks the run, so a recovering disk does not write this run's pending end as a run.finished.
      if (this.disk.error && !this.disk.retry()) {
        return unavailable(`${this.disk.error}; new runs are refused until a test write to this runner's runs folder succeeds`);
      }
      const checked = await validateExperiment(spec.files, spec.kind, { workspaceId: spec.workspace_id, runId });
      if (!checked.ok) {
        const errors = checked.diagnostics.filter((d) => d.severity === "error").length;
        return refuse(`the experiment has ${errors} error${errors === 1 ? "" : "s"}`, checked.diagnostics);
      }
      if (spec.kind === "eval" && checked.tasks.val.length === 0) {
        return refuse('eval runs need validation tasks: mark some tasks.jsonl lines with "split": "val"', [
          { file: "tasks.jsonl", line: 1, column: 1, message: "no validation tasks", severity: "error" },
        ]);
      }
      if (spec.eval_model !== undefined && spec.kind !== "eval") return refuse("eval_model is only for eval runs");
      // Every model the run names must be the base model or a checkpoint of its own workspace's runs (run-owner.ts).
      const config = checked.config;
      const configPosition = (path: string[]) => keyPosition(spec.files["config.json"], path);
      const crossing =
        (spec.eval_model !== undefined ? modelRefProblem(this.events.runsDir, "eval_model", spec.eval_model, spec.workspace_id) : null) ??
        (spec.init_from ? modelRefProblem(this.events.runsDir, "init_from", `${spec.init_from.run_id}@${spec.init_from.step}`, spec.workspace_id) : null);
      if (crossing) return refuse(crossing);
      const judgeModel = config.judge.model !== null && config.judge.base_url === null ? modelRefProblem(this.events.runsDir, "judge.model", config.judge.model, spec.workspace_id) : null;
      if (judgeModel) return refuse(judgeModel, [{ file: "config.json", ...configPosition(["judge", "model"]), message: judgeModel, severity: "error" }]);
      const mcp = resolveMcpConfig(config.mcp, spec.mcp_servers);
      if (!mcp.ok) {
        const diagnostics = mcp.problems.map((p): Diagnostic => ({ file: "config.json", ...configPosition(p.path), message: `${p.path.join(".")}: ${p.message}`, severity: "error" }));
        return refuse(diagnostics[0]!.message, diagnostics);
      }
      if (spec.init_from !== undefined) {
        if (spec.kind !== "train") return refuse(`init_from is only for train runs (an eval of a checkpoint names it in eval_model)`);
        if (spec.init_from.run_id === runId) return refuse("init_from: a run cannot start from its own checkpoint (resume it instead)");
        // Asked now so a cleaned-up checkpoint refuses the start; an engine still loading is asked again by the run.
        const problem = await initFromProblem(this.engine.engine, spec.init_from, { strict: false });
        if (problem) return refuse(problem);
      }
      // Only a loaded engine knows its context (it reports 0 while loading).
      const health = this.engine.status().health as { status?: string; max_context_tokens?: number } | null;
      const engineMax = health?.status === "ok" ? (health.max_context_tokens ?? 0) : 0;
      if (engineMax > 0 && checked.config.max_context_tokens > engineMax) {
        const message = `max_context_tokens: ${checked.config.max_context_tokens} exceeds the model's context of ${engineMax}`;
        return refuse(message, [{ file: "config.json", ...keyPosition(spec.files["config.json"], ["max_context_tokens"]), message, severity: "error" }]);
      }
      const judgeProblem = judgeConfigProblem(checked.config.judge, spec.secrets);
      if (judgeProblem) {
        return refuse(judgeProblem, [{ file: "config.json", ...keyPosition(spec.files["config.json"], ["judge", "api_key_secret"]), message: judgeProblem, severity: "error" }]);
      }
      const configText = spec.files["config.json"];
      const egress = await configEgressProblems(checked.config, this.egress, { sourcePath: (path) => configSourcePath(configText, path) });
      if (egress.length > 0) {
        return refuse(egress[0]!.message, egress.map((p) => ({ file: "config.json", ...keyPosition(spec.files["config.json"], p.path), message: p.message, severity: "error" as const })));
      }

      // Last of the checks, so a refused start leaves nothing behind: the run's workspace, written once.
      try {
        recordRunWorkspace(this.events.runsDir, runId, spec.workspace_id);
      } catch (err) {
        if (err instanceof RunOwnerConflict) return refuse(err.message);
        if (!(err as NodeJS.ErrnoException).code) throw err;
        const reason = diskFailureReason(this.runnerName, err);
        this.disk.fail(reason);
        return refuse(`${reason}, writing the run's files`);
      }
      // The attempt before this one ended while its run.finished could not be written, and the web server
      // recorded that end from status(): say in the log how it ended, as a run.log (a run.finished now, just
      // before this attempt's run.started, would read as this attempt ending).
      const previousEnd = this.unloggedEnds.get(runId);
      if (previousEnd) {
        const how = previousEnd.status === "failed" ? "failed" : `ended ${previousEnd.status}`;
        try {
          this.events.append(runId, {
            type: "run.log",
            payload: { level: previousEnd.status === "failed" ? "error" : "info", message: `the previous attempt ${how}: ${previousEnd.error ?? "no error"} (its run.finished could not be written at the time)` },
          });
        } catch (err) {
          if (!(err instanceof LogWriteError)) throw err;
          this.disk.fail(diskFailureReason(this.runnerName, err));
          return refuse(writeFailureReason(this.runnerName, err));
        }
        this.unloggedEnds.delete(runId);
      }
      this.writeFailed.delete(runId);

      const controller = new AbortController();
      // Every rollout in flight listens on the run's signal (its watchdog, its model calls): more than
      // Node's default of 10 is normal here, not a leak (each listener goes when its rollout ends).
      setMaxListeners(10_000, controller.signal);
      const record: ActiveRun = { controller, done: Promise.resolve(), step: 0, attempt: spec.attempt };
      // What the log holds before this attempt appends anything: the run loop reconciles it with the engine.
      const logged = spec.resume ? [...this.events.events(runId)] : undefined;
      const mask = new SecretMask(spec.secrets);
      this.events.begin(runId, mask, spec.attempt);
      const signal = controller.signal;
      const engine = this.engineFor(spec.workspace_id);
      record.done = executeRun({
        runId,
        workspaceId: spec.workspace_id,
        kind: spec.kind,
        config: checked.config,
        compiled: checked.compiled,
        exports: checked.exports,
        tasks: checked.tasks,
        evalModel: spec.eval_model,
        resume: spec.resume,
        logged,
        initFrom: spec.init_from,
        engine,
        engineSlots: this.engine.slots,
        judge: createJudgeClient(checked.config.judge, checked.config.model, queuedChat(engine, this.engine.slots, { runId, rolloutId: "judge", runCap: checked.config.limits.max_run_inflight_calls }), {
          runId,
          secrets: spec.secrets,
          egress: this.egress,
        }),
        connectMcp:
          Object.keys(mcp.config.servers).length === 0
            ? undefined
            : () =>
                connectRunMcp(mcp.config, {
                  allowStdio: this.mcp.allowStdio,
                  sandbox: this.mcp.sandbox,
                  secrets: { values: spec.secrets },
                  mask,
                  repoRoot: REPO_ROOT,
                  egress: this.egress,
                  signal,
                  onProblem: (message) => this.appendFor(runId, { type: "run.log", payload: { level: "error", message } }, controller),
                }),
        waitForEngine: () => this.engine.waitReady(signal),
        engineWatch: this.engine.watch,
        emit: (event) => this.appendFor(runId, event, controller),
        signal,
        onStep: (step) => {
          record.step = step;
        },
        recordTokens: (trajectoryId, sequences) =>
          appendTokenLine(this.events.runsDir, runId, { trajectory_id: trajectoryId, sequences }, (message) =>
            this.appendFor(runId, { type: "run.log", payload: { level: "warn", message } }, controller),
          ),
        publishCheckpoint: this.sharedCheckpointDir
          ? (step) => publishCheckpoint(this.events.runsDir, this.sharedCheckpointDir!, runId, step, this.runnerName)
          : undefined,
        recordTrainLogprobs: (step, groups, trained) =>
          appendTrainLogprobs(this.events.runsDir, runId, trainLogprobLines(step, groups, trained), (message) =>
            this.appendFor(runId, { type: "run.log", payload: { level: "warn", message } }, controller),
          ),
      })
        .then(() => undefined)
        .catch((err: unknown) => {
          // executeRun never throws; if appending the final event itself failed, say so on stderr.
          process.stderr.write(mask.mask(`run ${runId}: ${(err as Error).stack ?? String(err)}\n`));
        })
        .finally(() => {
          this.active.delete(runId);
        });
      this.active.set(runId, record);
      return { ok: true, run_id: runId };
    } finally {
      this.starting.delete(runId);
    }
  }

  /**
   * Abort a run's in-flight rollouts; it ends with run.finished "stopped". Resolves when it has ended. With
   * `attempt`, only that attempt is stopped: a late stop of an attempt that was resumed since is a no-op.
   */
  async stop(runId: string, attempt?: number): Promise<{ stopped: boolean }> {
    const run = this.active.get(runId);
    if (!run || (attempt !== undefined && run.attempt !== attempt)) return { stopped: false };
    run.controller.abort();
    await run.done;
    return { stopped: true };
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.active.keys()].map((id) => this.stop(id)));
  }

  /** Append a run.log event to every active run (e.g. the engine restarted under them). */
  logToActiveRuns(level: "info" | "warn" | "error", message: string): void {
    for (const [runId, run] of this.active) {
      try {
        this.appendFor(runId, { type: "run.log", payload: { level, message } }, run.controller);
      } catch (err) {
        process.stderr.write(`run ${runId}: could not log "${message}": ${(err as Error).message}\n`);
      }
    }
  }

  /**
   * One step over rollouts sampled outside this runner's loop (an ART client's training job): external-train.ts.
   * A run id of a scenario run here, or one already training such a step, is refused; so is any step while the
   * disk refuses writes (its token logs and checkpoint could not be written).
   */
  async *externalTrain(req: ExternalTrainRequest, signal: AbortSignal): AsyncGenerator<ExternalTrainLine> {
    try {
      assertSafeRunId(req.run_id);
    } catch (err) {
      yield { type: "error", message: (err as Error).message };
      return;
    }
    const runId = req.run_id;
    const engine = this.engineFor(req.workspace_id);
    const tokenizer = engine.tokenize ? engine.tokenize.bind(engine) : null;
    if (!tokenizer) return yield { type: "error", message: "this runner's engine cannot tokenize chat messages (an engine older than POST /tokenize)" };
    if (this.active.has(runId) || this.starting.has(runId) || this.events.exists(runId)) return yield { type: "error", message: `run ${runId} is a run of this runner's own loop, not one trained from outside` };
    if (this.externalSteps.has(runId)) return yield { type: "error", message: `run ${runId} is training a step already` };
    if (this.disk.error && !this.disk.retry()) return yield { type: "error", message: `${this.disk.error}; nothing is trained until a test write to this runner's runs folder succeeds` };
    this.externalSteps.add(runId);
    const warn = (message: string) => process.stderr.write(`run ${runId}: ${message}\n`);
    try {
      yield* externalTrain(
        {
          engine: { train: (b, s) => engine.train(b, s), checkpoints: (r) => engine.checkpoints(r), tokenize: (body, s) => tokenizer({ model: req.base_model, ...body }, s).then((r) => ({ tokens: r.tokens, served: r.served })) },
          waitReady: (s) => this.engine.waitReady(s),
          watch: this.engine.watch,
          recordWorkspace: (id, ws) => recordRunWorkspace(this.events.runsDir, id, ws),
          recordTokens: (id, trajectoryId, sequences) => appendTokenLine(this.events.runsDir, id, { trajectory_id: trajectoryId, sequences }, warn),
          recordTrainLogprobs: (id, step, groups, trained) => appendTrainLogprobs(this.events.runsDir, id, trainLogprobLines(step, groups, trained), warn),
          publishCheckpoint: this.sharedCheckpointDir ? (id, step) => publishCheckpoint(this.events.runsDir, this.sharedCheckpointDir!, id, step, this.runnerName) : undefined,
        },
        req,
        signal,
      );
    } finally {
      this.externalSteps.delete(runId);
    }
  }

  /** Publishes a checkpoint saved outside the loop (a Tinker save) to the shared folder, when there is one. */
  publishCheckpointFn(): ((runId: string, step: number) => Promise<void>) | undefined {
    const shared = this.sharedCheckpointDir;
    return shared ? (id, step) => publishCheckpoint(this.events.runsDir, shared, id, step, this.runnerName) : undefined;
  }

  /** Whether this runner is running the run now, or starting it (a move must not replace its files then). */
  isRunning(runId: string): boolean {
    return this.active.has(runId) || this.starting.has(runId);
  }

  exists(runId: string): boolean {
    return this.active.has(runId) || this.events.exists(runId);
  }

  /** Resolves when the run (if active) has finished; for tests and shutdown. */
  async waitFor(runId: string): Promise<void> {
    await this.active.get(runId)?.done;
  }

  private runStatus(runId: string): { status: RunStatus; step: number; error: string | null } {
    const events = this.events.events(runId);
    let step = 0;
    let status: RunStatus = this.active.has(runId) ? "running" : "queued";
    let error: string | null = null;
    for (const e of events) {
      if (e.type === "step.finished" || e.type === "checkpoint.saved") step = Math.max(step, e.payload.step);
      else if (e.type === "eval.finished") step = Math.max(step, e.payload.step);
      else if (e.type === "run.started") [status, error] = ["running", null];
      else if (e.type === "run.finished") [status, error] = [e.payload.status, e.payload.error];
    }
    if (this.active.has(runId)) {
      status = "running";
      error = null;
      step = Math.max(step, this.active.get(runId)!.step);
      return { status, step, error };
    }
    // Ended, but its run.finished is not in the log (yet): how it ended is known here only.
    const unlogged = this.unloggedEnds.get(runId);
    if (unlogged) return { status: unlogged.status, step, error: unlogged.error };
    return { status, step, error };
  }

  status(): RunnerStatus {
    const ids = new Set([...this.events.listStored(), ...this.active.keys()]);
    return {
      runner: this.runnerName,
      engine: this.engine.status(),
      runs: [...ids]
        .sort()
        .map((run_id) => ({ run_id, last_seq: this.events.lastSeq(run_id), attempt: this.events.attemptOf(run_id), ...this.runStatus(run_id) })),
      ...(this.engine.slots ? { engine_queue: this.engine.slots.status() } : {}),
      disk_error: this.disk.error,
    };
  }

  /** Stop the disk's retry timer (the server's shutdown). */
  close(): void {
    this.disk.stop();
  }
}

