/**
 * The entry points the runner calls inside the sandbox, installed by the experiment's bundle after the
 * user's modules loaded (the bundler's generated entry calls installEntryPoints with scenario.ts's and
 * reward.ts's exports). Every answer is a small plain object built here — never a user value — so the
 * runner copies nothing it did not expect; it validates these shapes again on its side.
 */
import type * as z from "zod";
import { makeContext } from "./context";
import { formatIssues } from "./tools";
import { show } from "./show";

type Module = Record<string, unknown>;

export const ENTRY_GLOBAL = "__rollbook_entry";

type Failure = { ok: false; name: string; message: string; stack?: string };


function describeError(e: unknown): Failure {
  try {
    if (e instanceof Error) {
      const stack = e.stack;
      return { ok: false, name: String(e.name), message: String(e.message), stack: typeof stack === "string" ? stack : undefined };
    }
    return { ok: false, name: "Error", message: `threw a non-Error value: ${show(e)}` };
  } catch {
    return { ok: false, name: "Error", message: "threw a value that could not be described" };
  }
}

function isZodSchema(value: unknown): value is z.ZodType {
  return typeof value === "object" && value !== null && "_zod" in value && typeof (value as z.ZodType).safeParse === "function";
}

/** [name, value or null, typeof] per metric, at most `max + 1` of them (the runner reports the excess). */
function metricEntries(m: unknown, max: number): [string, number | null, string][] {
  const out: [string, number | null, string][] = [];
  if (m === null || typeof m !== "object" || Array.isArray(m)) return out;
  for (const k of Object.keys(m).slice(0, max + 1)) {
    const v = (m as Record<string, unknown>)[k];
    out.push([k, typeof v === "number" ? v : null, typeof v]);
  }
  return out;
}

const typeName = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

export function installEntryPoints(mods: { scenario: Module; reward: Module }, caps: { maxMetrics: number; maxTaskErrors: number }): void {
  const { scenario, reward } = mods;
  const taskSchema = scenario.taskSchema;
  let outputJson = "null";

  /** The task as the user's code sees it: parsed by taskSchema when there is one (defaults applied). */
  const readTask = (taskJson: string): unknown => {
    const raw: unknown = JSON.parse(taskJson);
    return isZodSchema(taskSchema) ? taskSchema.parse(raw) : raw;
  };

  const entry = {
    describe() {
      return {
        scenario: typeof scenario.default === "function",
        reward: typeof reward.default === "function",
        groupReward: typeof reward.groupReward === "function",
        taskSchema: taskSchema === undefined ? "none" : isZodSchema(taskSchema) ? "zod" : "invalid",
      };
    },

    /** Rows (JSON array of task objects) checked against taskSchema: the first errors and how many rows failed. */
    checkTasks(rowsJson: string) {
      try {
        if (!isZodSchema(taskSchema)) return { ok: true, failed: 0, errors: [] };
        const rows = JSON.parse(rowsJson) as unknown[];
        const errors: { row: number; path: string; message: string }[] = [];
        let failed = 0;
        rows.forEach((row, i) => {
          const r = taskSchema.safeParse(row);
          if (r.success) return;
          failed++;
          if (errors.length >= caps.maxTaskErrors) return;
          const issue = r.error.issues[0];
          errors.push({ row: i, path: issue ? issue.path.map(String).join(".") : "", message: formatIssues(r.error) });
        });
        return { ok: true, failed, errors };
      } catch (e) {
        return describeError(e);
      }
    },

    async runScenario(taskJson: string, split: "train" | "val", step: number, group: number, rolloutIndex: number, mcpServers: string[]) {
      try {
        const fn = scenario.default;
        if (typeof fn !== "function") return { ok: false, name: "TypeError", message: "scenario.ts must export default the rollout function" };
        const ctx = makeContext({ task: readTask(taskJson), split, step, group, rolloutIndex }, mcpServers);
        const out: unknown = await (fn as (c: unknown) => unknown)(ctx);
        let json: string | undefined;
        try {
          json = out === undefined ? "null" : JSON.stringify(out);
        } catch (e) {
          return { ok: false, name: "TypeError", message: `the scenario's return value is not JSON-serialisable: ${show((e as Error)?.message)}` };
        }
        if (json === undefined) {
          return { ok: false, name: "TypeError", message: `the scenario returned a ${typeof out}; return JSON-serialisable data (or nothing)` };
        }
        outputJson = json;
        return { ok: true, outputJson: json };
      } catch (e) {
        return describeError(e);
      }
    },

    /** `recordedOutputJson`: a re-score passes the output recorded with a past rollout instead of this sandbox's scenario's. */
    async runReward(taskJson: string, messagesJson: string, recordedOutputJson?: string) {
      try {
        const fn = reward.default;
        if (typeof fn !== "function") return { ok: false, name: "TypeError", message: "reward.ts must export default the reward function" };
        const output: unknown = JSON.parse(typeof recordedOutputJson === "string" ? recordedOutputJson : outputJson);
        const r: unknown = await (fn as (i: unknown) => unknown)({ task: readTask(taskJson), output, messages: JSON.parse(messagesJson) });
        if (typeof r === "number") return { ok: true, type: "number", reward: r, metrics: [] };
        if (r === null || typeof r !== "object") return { ok: true, type: typeName(r), reward: null, metrics: [] };
        const value = (r as { reward?: unknown }).reward;
        const m = (r as { metrics?: unknown }).metrics;
        return {
          ok: true,
          type: "object",
          rewardType: typeof value,
          reward: typeof value === "number" ? value : null,
          metricsType: typeName(m),
          metrics: metricEntries(m, caps.maxMetrics),
        };
      } catch (e) {
        return describeError(e);
      }
    },

    /** input: { task, rollouts: [{ output, messages, reward, metrics }] } as JSON. */
    async runGroupReward(inputJson: string) {
      try {
        const fn = reward.groupReward;
        if (typeof fn !== "function") return { ok: false, name: "TypeError", message: "reward.ts exports no groupReward function" };
        const input = JSON.parse(inputJson) as { task: unknown; rollouts: unknown[] };
        const r: unknown = await (fn as (i: unknown) => unknown)({ task: isZodSchema(taskSchema) ? taskSchema.parse(input.task) : input.task, rollouts: input.rollouts });
        const rewards: unknown = Array.isArray(r) ? r : r && typeof r === "object" ? (r as { rewards?: unknown }).rewards : undefined;
        if (!Array.isArray(rewards)) return { ok: true, shape: typeName(r), rewards: [], metrics: [] };
        const metrics: unknown = !Array.isArray(r) && r && typeof r === "object" ? (r as { metrics?: unknown }).metrics : undefined;
        const n = input.rollouts.length;
        // Index by index, never slice/map: an array-like Proxy or a sparse array would leave holes.
        const rewardEntries: [number | null, string][] = [];
        for (let i = 0; i < Math.min(rewards.length, n + 1); i++) {
          const v: unknown = rewards[i];
          rewardEntries.push([typeof v === "number" ? v : null, typeof v]);
        }
        const metricLists: ReturnType<typeof metricEntries>[] = [];
        if (Array.isArray(metrics)) for (let i = 0; i < Math.min(metrics.length, n); i++) metricLists.push(metricEntries(metrics[i], caps.maxMetrics));
        return { ok: true, shape: "rewards", rewards: rewardEntries, metrics: metricLists };
      } catch (e) {
        return describeError(e);
      }
    },
  };
  Object.defineProperty(globalThis, ENTRY_GLOBAL, { value: Object.freeze(entry), writable: false, configurable: false, enumerable: false });
}
