/**
 * The sandbox's glue, as source text evaluated inside each fresh isolate before the user's bundles. It
 * builds `ctx` around three host references (chat, log, metric), hides those references from user code
 * (they live only in this closure), and defines the two entry points the host calls: run the scenario,
 * then run the reward. Results come back as small plain objects built here, so the host never has to copy
 * arbitrary user values across the boundary; the host validates them again anyway (run-rollout.ts).
 */

export const BOOTSTRAP_FILENAME = "rollbook-sandbox.js";

/** Per-rollout caps, so a chatty or buggy scenario cannot flood the trajectory or the event log. */
export const SANDBOX_CAPS = {
  maxLogLines: 200,
  maxLogLineChars: 2_000,
  maxMetrics: 64,
  maxMetricNameChars: 100,
} as const;

export function bootstrapSource(globals: { scenario: string; reward: string }): string {
  const caps = JSON.stringify(SANDBOX_CAPS);
  return `"use strict";
(() => {
  const g = globalThis;
  const chatRef = g.__rollbook_chat, logRef = g.__rollbook_log, metricRef = g.__rollbook_metric;
  delete g.__rollbook_chat; delete g.__rollbook_log; delete g.__rollbook_metric;
  // Captured now: user code may overwrite globals later, and that must not break the glue.
  const { stringify, parse } = JSON;
  const isFiniteNumber = Number.isFinite, keys = Object.keys, freeze = Object.freeze, toStr = Object.prototype.toString;
  const ErrorCtor = Error, TypeErrorCtor = TypeError, SetCtor = Set;
  const caps = ${caps};
  let logLines = 0;
  const metricNames = new SetCtor();
  let outputJson = "null";

  class ModelError extends ErrorCtor {}
  ModelError.prototype.name = "ModelError";

  function show(v) {
    if (typeof v === "string") return v;
    if (v instanceof ErrorCtor) return typeof v.stack === "string" ? v.stack : String(v);
    try { const s = stringify(v); if (s !== undefined) return s; } catch {}
    try { return String(v); } catch { return toStr.call(v); }
  }

  function log(...args) {
    if (logLines > caps.maxLogLines) return;
    logLines++;
    let line = logLines > caps.maxLogLines
      ? "(log limit of " + caps.maxLogLines + " lines reached; later lines dropped)"
      : args.map(show).join(" ");
    if (line.length > caps.maxLogLineChars) {
      line = line.slice(0, caps.maxLogLineChars) + "… (" + (line.length - caps.maxLogLineChars) + " more characters)";
    }
    logRef.applySync(undefined, [line]);
  }

  function metric(name, value) {
    if (typeof name !== "string" || name.length === 0 || name.length > caps.maxMetricNameChars) {
      throw new TypeErrorCtor("ctx.metric: the name must be a non-empty string of at most " + caps.maxMetricNameChars + " characters");
    }
    if (typeof value !== "number" || !isFiniteNumber(value)) {
      throw new TypeErrorCtor("ctx.metric(" + stringify(name) + "): the value must be a finite number, got " + show(value));
    }
    if (!metricNames.has(name) && metricNames.size >= caps.maxMetrics) {
      throw new TypeErrorCtor("ctx.metric: at most " + caps.maxMetrics + " metric names per rollout");
    }
    metricNames.add(name);
    metricRef.applySync(undefined, [name, value]);
  }

  async function chat(messages, options) {
    let pending;
    try {
      pending = chatRef.apply(undefined, [messages, options], { arguments: { copy: true }, result: { promise: true, copy: true } });
    } catch (e) {
      throw new TypeErrorCtor("ctx.chat: messages and options must be plain data (" + show(e && e.message) + ")");
    }
    const r = await pending;
    if (!r.ok) throw r.name === "ModelError" ? new ModelError(r.message) : r.name === "TypeError" ? new TypeErrorCtor(r.message) : new ErrorCtor(r.message);
    return r.value;
  }

  const consoleLike = freeze({ log, info: log, warn: log, error: log, debug: log });
  g.console = consoleLike;

  function describe(e) {
    try {
      if (e instanceof ErrorCtor) {
        return { ok: false, name: String(e.name), message: String(e.message), stack: typeof e.stack === "string" ? e.stack : undefined };
      }
      return { ok: false, name: "Error", message: "threw a non-Error value: " + show(e) };
    } catch {
      return { ok: false, name: "Error", message: "threw a value that could not be described" };
    }
  }

  function defaultExport(globalName) {
    const mod = g[globalName];
    return mod && typeof mod.default === "function" ? mod.default : null;
  }

  g.__rollbook_run_scenario = async (taskJson, split, step, rolloutIndex) => {
    try {
      const fn = defaultExport(${JSON.stringify(globals.scenario)});
      if (!fn) return { ok: false, name: "TypeError", message: "scenario.ts must export default the rollout function" };
      const ctx = freeze({ task: parse(taskJson), split, step, rolloutIndex, chat, log, metric });
      const out = await fn(ctx);
      let json;
      try {
        json = out === undefined ? "null" : stringify(out);
      } catch (e) {
        return { ok: false, name: "TypeError", message: "the scenario's return value is not JSON-serialisable: " + show(e && e.message) };
      }
      if (json === undefined) {
        return { ok: false, name: "TypeError", message: "the scenario returned a " + typeof out + "; return JSON-serialisable data (or nothing)" };
      }
      outputJson = json;
      return { ok: true, outputJson: json };
    } catch (e) {
      return describe(e);
    }
  };

  g.__rollbook_run_reward = async (taskJson, messagesJson) => {
    try {
      const fn = defaultExport(${JSON.stringify(globals.reward)});
      if (!fn) return { ok: false, name: "TypeError", message: "reward.ts must export default the reward function" };
      const r = await fn({ task: parse(taskJson), output: parse(outputJson), messages: parse(messagesJson) });
      if (typeof r === "number") return { ok: true, type: "number", reward: r, metrics: [] };
      if (r === null || typeof r !== "object") return { ok: true, type: r === null ? "null" : typeof r, reward: null, metrics: [] };
      const reward = r.reward, m = r.metrics;
      const metrics = [];
      const metricsType = m === null ? "null" : Array.isArray(m) ? "array" : typeof m;
      if (metricsType === "object") {
        for (const k of keys(m).slice(0, caps.maxMetrics + 1)) {
          const v = m[k];
          metrics.push([k, typeof v === "number" ? v : null, typeof v]);
        }
      }
      return {
        ok: true, type: "object", rewardType: typeof reward,
        reward: typeof reward === "number" ? reward : null, metricsType, metrics,
      };
    } catch (e) {
      return describe(e);
    }
  };
})();
`;
}
