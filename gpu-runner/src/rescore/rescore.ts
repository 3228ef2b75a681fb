/**
 * Re-score: run an (edited) reward over stored trajectories, with no new sampling. The files are checked
 * exactly as `validate` checks them (type check, bundle, config, tasks, exports), so a broken edit comes
 * back as diagnostics at file, line and column. Then each trajectory's reward runs in a sandbox of its own
 * with the experiment's limits — the path a rollout's reward takes (run-rollout.ts), given the scenario
 * output recorded with the trajectory instead of a fresh one — and a throw, a timeout or a bad value is
 * that trajectory's error (stack mapped to the user's file:line), never the call's.
 *
 * Judges: the reward (and a groupReward, e.g. RULER) may call the experiment's judge model. The runner's
 * judge client makes that a one-liner, so it is supported: the judge is whatever config.json names — the
 * runner's engine (which must be up) or an OpenAI-compatible endpoint. MCP and the policy are reached
 * through the scenario's ctx, which a reward does not get; the host refuses them anyway, with a message,
 * rather than start the experiment's MCP servers for a what-if.
 */
import { setMaxListeners } from "node:events";
import type { z } from "zod";
import { type LimitsConfig, RescoreRequest, type RescoreResponse, type RescoredTrajectory, type RescoreTrajectory, type RolloutError } from "../../../contracts";
import { RESCORE_BUDGET_MS, SecretMask } from "../../../contracts";
import { modelRefProblem } from "../loop/run-owner";
import type { EngineClient } from "../engine/client";
import type { CompiledExperiment } from "../experiment/compile";
import { validateExperiment } from "../experiment/validate";
import { createJudgeClient, judgeConfigProblem, type JudgeClient } from "../judge/judge-client";
import type { EgressAllow } from "../net/egress-policy";
import { mapConcurrent } from "../loop/pool";
import { type RolloutHost, createBridge } from "../sandbox/bridge";
import { SANDBOX_CAPS } from "../sandbox/caps";
import { classify, thrown } from "../sandbox/outcome";
import type { SandboxPlacement } from "../sandbox/cpu/share";
import { SandboxUnavailable } from "../sandbox/pool";
import { openSandbox, type RemoteSandbox } from "../sandbox/remote";
import { runGroupReward } from "../sandbox/run-group";
import { RewardResult, checkReward } from "../sandbox/run-rollout";

export interface RescoreDeps {
  /** The runner's engine: the judge model when config.json's judge has no base_url. */
  engine: Pick<EngineClient, "chat">;
  /** The runs folder: a judge.model naming a checkpoint must be a run of the request's workspace (run-owner.ts). */
  runsDir: string;
  /** Time budget of the whole call (default RESCORE_BUDGET_MS). */
  budgetMs?: number;
  /** The operator's EGRESS_ALLOW, for a judge at a base_url (none: only public addresses). */
  egress?: EgressAllow;
}

/** Sandboxes at once: the experiment's own max_concurrency, but a re-score shares the runner with live runs. */
const MAX_PARALLEL = 16;

const MCP_REFUSED = "MCP servers are not connected during a re-score, so a reward that calls one cannot be re-scored";

function rescoreHost(judge: JudgeClient, signal: AbortSignal): RolloutHost {
  return {
    chat: () => Promise.reject(new Error("ctx.chat is not available in a reward function")),
    judge: (messages, options, gate) => judge.chat(messages, options, AbortSignal.any([gate, signal])),
    mcpList: () => Promise.reject(new Error(MCP_REFUSED)),
    mcpCall: () => Promise.reject(new Error(MCP_REFUSED)),
  };
}

interface Scored extends RescoredTrajectory {
  judge: { prompt_tokens: number; completion_tokens: number; cost_usd: number; calls: number };
}

interface Job {
  compiled: CompiledExperiment;
  limits: LimitsConfig;
  judge: JudgeClient;
  signal: AbortSignal;
  /** Why a trajectory was not reached, once the budget ran out. */
  notReached: () => RolloutError;
  /** The CPU share its sandboxes compute under: the workspace's, as a run of its own. */
  placement: SandboxPlacement;
}

function judgeMetrics(judge: Scored["judge"], share = 1): Record<string, number> {
  if (judge.calls === 0) return {};
  return { judge_tokens: (judge.prompt_tokens + judge.completion_tokens) / share, judge_cost_usd: judge.cost_usd / share };
}

async function scoreOne(t: RescoreTrajectory, job: Job): Promise<Scored> {
  const started = performance.now();
  const { compiled, limits, signal } = job;
  const bridge = createBridge(rescoreHost(job.judge, signal), limits, "reward");
  const done = (error: RolloutError | null, reward: number | null = null, metrics: [string, number][] = []): Scored => ({
    id: t.id,
    reward: error ? null : reward,
    // ctx.metric values, then the reward's (which win on a clash), then the runner's own count — as in a rollout.
    metrics: error ? {} : { ...bridge.record.metrics, ...Object.fromEntries(metrics), ...judgeMetrics(bridge.record.judge) },
    error,
    duration_ms: Math.round(performance.now() - started),
    logs: [...bridge.record.logs],
    judge: { ...bridge.record.judge },
  });
  if (signal.aborted) return done(job.notReached());
  let sandbox: RemoteSandbox | undefined;
  try {
    sandbox = await openSandbox(compiled, limits, bridge, { signal, placement: job.placement });
    const args = [JSON.stringify(t.task ?? null), JSON.stringify(t.messages), JSON.stringify(t.output ?? null)];
    const r = RewardResult.parse(await sandbox.call("runReward", args));
    if (!r.ok) return done(thrown(compiled, r, "reward"));
    const checked = checkReward(r, SANDBOX_CAPS.maxMetrics);
    if (typeof checked === "string") return done({ kind: "reward", message: checked });
    return done(null, checked.reward, checked.metrics);
  } catch (err) {
    if (signal.aborted) return done(job.notReached());
    if (err instanceof SandboxUnavailable) return done({ kind: "thrown", message: `not re-scored: ${err.message}` });
    return done(classify(err, compiled, limits));
  } finally {
    bridge.enter("closed");
    sandbox?.dispose();
    bridge.release();
  }
}

/**
 * reward.ts's groupReward over one re-scored training group, as the loop applies it (loop/group-reward.ts):
 * the members that got a reward are judged together in rollout order; each keeps its own reward as
 * `independent_reward` and takes the group's; a failed groupReward fails those members.
 */
async function applyGroup(members: { t: RescoreTrajectory; s: Scored }[], job: Job): Promise<void> {
  const scored = members.filter((m) => m.s.error === null && m.s.reward !== null);
  if (scored.length === 0) return;
  if (job.signal.aborted) {
    for (const m of scored) Object.assign(m.s, { reward: null, metrics: {}, error: job.notReached() });
    return;
  }
  let outcome: Awaited<ReturnType<typeof runGroupReward>>;
  try {
    outcome = await runGroupReward({
      compiled: job.compiled,
      task: scored[0]!.t.task,
      rollouts: scored.map((m) => ({ output: m.t.output ?? null, messages: m.t.messages, reward: m.s.reward as number, metrics: m.s.metrics })),
      limits: job.limits,
      host: rescoreHost(job.judge, job.signal),
      signal: job.signal,
      placement: job.placement,
    });
  } catch (err) {
    outcome = { rewards: null, metrics: [], record: { logs: [], metrics: {}, judge: { prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, calls: 0 } }, logs: [], error: { kind: "thrown", message: (err as Error).message } };
  }
  const n = scored.length;
  scored.forEach(({ s }, i) => {
    s.logs.push(...outcome.logs.map((line) => `groupReward: ${line}`));
    if (outcome.error || !outcome.rewards) {
      const message = job.signal.aborted ? job.notReached().message : `groupReward failed: ${outcome.error?.message ?? "no rewards"}`;
      s.error = { ...(outcome.error ?? { kind: "reward" as const }), message };
      s.reward = null;
      s.metrics = {};
      return;
    }
    const judged = judgeMetrics(outcome.record.judge, n);
    s.metrics = {
      ...s.metrics,
      ...(outcome.metrics[i] ?? {}),
      independent_reward: s.reward as number,
      ...(judged.judge_tokens !== undefined ? { judge_tokens: (s.metrics.judge_tokens ?? 0) + judged.judge_tokens, judge_cost_usd: (s.metrics.judge_cost_usd ?? 0) + (judged.judge_cost_usd ?? 0) } : {}),
    };
    s.reward = outcome.rewards[i] as number;
  });
}

/** Numeric-aware id order: the loop sorts a group's rollouts this way before its groupReward. */
const byId = (a: { t: RescoreTrajectory }, b: { t: RescoreTrajectory }) => a.t.id.localeCompare(b.t.id, "en", { numeric: true });

export async function rescoreTrajectories(input: z.input<typeof RescoreRequest>, deps: RescoreDeps, signal?: AbortSignal): Promise<RescoreResponse> {
  const started = performance.now();
  const request = RescoreRequest.parse(input);
  // Every re-score of a workspace computes in one CPU group of its own, beside that workspace's runs.
  const placement: SandboxPlacement = { workspaceId: request.workspace_id, runId: "(rescore)" };
  const checked = await validateExperiment(request.files, request.kind, placement);
  if (!checked.ok) {
    const first = checked.diagnostics.find((d) => d.severity !== "warning") ?? checked.diagnostics[0];
    const error = first ? `${first.file}:${first.line}:${first.column}: ${first.message}` : "the experiment does not check";
    return { ok: false, error, diagnostics: checked.diagnostics };
  }
  const { compiled, config, exports } = checked;
  // The same refusals as a run's start: a judge model of another workspace, a key the workspace does not have.
  const refused =
    (config.judge.model !== null && config.judge.base_url === null ? modelRefProblem(deps.runsDir, "judge.model", config.judge.model, request.workspace_id) : null) ??
    judgeConfigProblem(config.judge, request.secrets);
  if (refused) return { ok: false, error: refused, diagnostics: [] };
  const mask = new SecretMask(request.secrets);
  const budgetMs = deps.budgetMs ?? RESCORE_BUDGET_MS;
  const budget = AbortSignal.timeout(budgetMs);
  const jobSignal = signal ? AbortSignal.any([signal, budget]) : budget;
  // Every sandbox and judge call listens on it: up to MAX_PARALLEL at once, more than Node's default warns at.
  setMaxListeners(0, jobSignal);
  const job: Job = {
    compiled,
    limits: config.limits,
    judge: createJudgeClient(config.judge, config.model, deps.engine, { secrets: request.secrets, egress: deps.egress }),
    signal: jobSignal,
    notReached: () => ({ kind: "timeout", message: `not re-scored: the re-score's time budget of ${budgetMs / 1000} s ran out before this trajectory` }),
    placement,
  };

  const scored = await mapConcurrent(request.trajectories, Math.min(config.max_concurrency, MAX_PARALLEL), (t) => scoreOne(t, job));

  if (exports.groupReward) {
    // Training groups only: a relative score means nothing for one validation rollout (as in the loop).
    const groups = new Map<string, { t: RescoreTrajectory; s: Scored }[]>();
    request.trajectories.forEach((t, i) => {
      if (t.split !== "train") return;
      const key = `${t.step}:${t.group}`;
      const list = groups.get(key) ?? [];
      list.push({ t, s: scored[i]! });
      groups.set(key, list);
    });
    await mapConcurrent([...groups.values()], Math.min(config.max_concurrency, MAX_PARALLEL), (members) => applyGroup(members.sort(byId), job));
  }

  const results = scored.map(({ judge: _judge, ...r }) => r);
  return {
    ok: true,
    group_reward: exports.groupReward,
    scale_rewards: config.trainer.scale_rewards,
    // An error quoting a judge's answer or header must not carry the workspace's secret to the page.
    results: mask.empty ? results : (JSON.parse(mask.mask(JSON.stringify(results))) as RescoredTrajectory[]),
    diagnostics: checked.diagnostics,
    duration_ms: Math.round(performance.now() - started),
  };
}
