/**
 * The sandbox's glue, as source text evaluated inside each fresh isolate before the experiment's bundle. It
 * turns the host's ivm.References (set as temporary globals and deleted here at once) into the bridge the
 * SDK runtime uses (`__rollbook_host`, see gpu-runner/sdk/runtime/host.ts) and defines `console`.
 *
 * Everything here assumes the user's code will try to subvert it:
 * - Only strings and numbers cross the boundary. Requests travel as one JSON string made here (getters run
 *   once, here; proxies, SharedArrayBuffers and cycles never reach the host) and answers come back as one.
 * - isolated-vm reads its transfer options with ordinary property lookups, prototype chain included, so the
 *   option objects have no prototype: what user code plants on Object.prototype cannot change how values
 *   cross. The host functions return nothing or one string: an object would reach the isolate as an
 *   ivm.Reference, a handle on the host's value (see hostile/controls.test.ts).
 * - Builtins the glue uses are captured before user code runs; replacing a global or a prototype later
 *   changes nothing here.
 * - WebAssembly, SharedArrayBuffer and Atomics are removed: a wasm Memory lives outside the heap that
 *   limits.memory_mb caps, and Atomics.wait parks the isolate's thread.
 * - Floods stop here, before they cost the runner anything: requests over their size limit, calls beyond
 *   the in-flight bound or the per-rollout budget, log lines past the cap, metric names past the cap.
 * The runner checks every one of these again on its side (bridge.ts); this is the first line, not the only.
 */
import type { LimitsConfig } from "../../../contracts";
import { SANDBOX_CAPS } from "./caps";

export const BOOTSTRAP_FILENAME = "rollbook-sandbox.js";
/** Each host reference is set as `__rollbook_ref_<name>` and taken (and deleted) by the glue at once. */
export const REF_GLOBAL_PREFIX = "__rollbook_ref_";
export const HOST_GLOBAL = "__rollbook_host";

/** The host functions a sandbox gets (each an ivm.Reference to a function of the sandbox process). */
export const BRIDGE_FUNCTIONS = ["chat", "judge", "mcpList", "mcpCall", "log", "metric"] as const;
export type BridgeFunction = (typeof BRIDGE_FUNCTIONS)[number];

/** Globals deleted before any user code runs (see above). */
export const REMOVED_GLOBALS = ["WebAssembly", "SharedArrayBuffer", "Atomics"] as const;

/** Longest MCP server or tool name (the runner's schema says the same). */
export const MAX_MCP_NAME_CHARS = 200;

export function bootstrapSource(limits: LimitsConfig): string {
  const caps = {
    maxInflight: limits.max_inflight_calls,
    maxQueued: SANDBOX_CAPS.maxQueuedCalls,
    maxHostCalls: SANDBOX_CAPS.maxHostCalls,
    maxPromptChars: limits.max_prompt_chars,
    maxToolArgsChars: limits.max_tool_args_chars,
    maxLogLines: SANDBOX_CAPS.maxLogLines,
    maxLogLineChars: SANDBOX_CAPS.maxLogLineChars,
    maxMetrics: SANDBOX_CAPS.maxMetrics,
    maxMetricNameChars: SANDBOX_CAPS.maxMetricNameChars,
    maxMcpNameChars: MAX_MCP_NAME_CHARS,
  };
  return `"use strict";
(() => {
  const g = globalThis;
  const refs = { __proto__: null };
  for (const name of ${JSON.stringify(BRIDGE_FUNCTIONS)}) {
    const key = ${JSON.stringify(REF_GLOBAL_PREFIX)} + name;
    refs[name] = g[key];
    delete g[key];
  }
  for (const name of ${JSON.stringify(REMOVED_GLOBALS)}) delete g[name];
  const C = ${JSON.stringify(caps)};
  const freeze = Object.freeze, stringify = JSON.stringify, parse = JSON.parse, apply = Reflect.apply;
  const toStr = Object.prototype.toString, strSlice = String.prototype.slice, then = Promise.prototype.then;
  const ErrorCtor = Error, TypeErrorCtor = TypeError, PromiseCtor = Promise, StringCtor = String;
  const COPY = freeze({ __proto__: null, copy: true });
  const ASYNC = freeze({ __proto__: null, arguments: COPY, result: freeze({ __proto__: null, promise: true, copy: true }) });
  const SYNC = freeze({ __proto__: null, arguments: COPY });

  // 1234567 → "1,234,567" without Number.prototype.toLocaleString (user code may have replaced it).
  const group = (n) => {
    let s = StringCtor(n), out = "";
    while (s.length > 3) { out = "," + apply(strSlice, s, [-3]) + out; s = apply(strSlice, s, [0, -3]); }
    return s + out;
  };
  const errorMessage = (e) => { try { return StringCtor(e && e.message); } catch { return "unknown error"; } };
  const settled = (value) => new PromiseCtor((resolve) => resolve(value));
  const refuse = (name, message) => settled(freeze({ ok: false, name, message }));
  const limitError = (message) => { const e = new ErrorCtor(message); e.name = "LimitError"; return e; };

  // Calls in flight (answered or not) and calls made: the runner's gate bounds the same things.
  let pending = 0, calls = 0;
  const send = (ref, what, json) => {
    if (calls >= C.maxHostCalls) {
      return refuse("LimitError", what + ": this rollout has already made " + group(C.maxHostCalls) + " model, judge and MCP calls (the sandbox's cap)");
    }
    if (pending >= C.maxInflight + C.maxQueued) {
      return refuse("LimitError", what + ": " + pending + " calls already pending in this rollout (limits.max_inflight_calls " + C.maxInflight + ", plus " + C.maxQueued + " waiting)");
    }
    calls++;
    pending++;
    const answered = (envelope) => { pending--; return parse(envelope); };
    const lost = (e) => { pending--; return freeze({ ok: false, name: "Error", message: what + ": the bridge failed: " + errorMessage(e) }); };
    return apply(then, ref.apply(undefined, [json], ASYNC), [answered, lost]);
  };
  // The request as one JSON string, or a refusal (a promise) when it is not JSON data.
  const toJson = (what, value) => {
    let json;
    try {
      json = stringify(value);
    } catch (e) {
      return refuse("TypeError", what + ": the arguments are not JSON data (" + errorMessage(e) + ")");
    }
    return typeof json === "string" ? json : refuse("TypeError", what + ": the arguments are not JSON data");
  };
  // ctx.chat and judgeChat: the request is [messages, options] as JSON, capped by limits.max_prompt_chars.
  const request = (ref, what, messages, options) => {
    const json = toJson(what, [messages, options === undefined ? {} : options]);
    if (typeof json !== "string") return json;
    if (json.length > C.maxPromptChars) {
      return refuse("LimitError", what + ": the messages and options are " + group(json.length) + " characters as JSON; limits.max_prompt_chars is " + group(C.maxPromptChars));
    }
    return send(ref, what, json);
  };
  const mcpCall = (server, tool, args) => {
    const what = "ctx.mcp.call";
    if (typeof server !== "string" || typeof tool !== "string" || server.length > C.maxMcpNameChars || tool.length > C.maxMcpNameChars) {
      return refuse("TypeError", what + "(server, tool, args): server and tool must be names of at most " + C.maxMcpNameChars + " characters");
    }
    const argsJson = toJson(what, args === undefined ? {} : args);
    if (typeof argsJson !== "string") return argsJson;
    if (argsJson.length > C.maxToolArgsChars) {
      return refuse("LimitError", what + ": the arguments are " + group(argsJson.length) + " characters of JSON; limits.max_tool_args_chars is " + group(C.maxToolArgsChars));
    }
    return send(refs.mcpCall, what + '("' + server + '", "' + tool + '")', "[" + stringify(server) + "," + stringify(tool) + "," + argsJson + "]");
  };

  // One line past the cap crosses, so the host can say that later lines were dropped; then nothing does.
  let logLines = 0;
  const log = (line) => {
    if (logLines > C.maxLogLines) return;
    logLines++;
    const s = typeof line === "string" ? line : StringCtor(line);
    const kept = s.length > C.maxLogLineChars ? apply(strSlice, s, [0, C.maxLogLineChars]) : s;
    refs.log.applySync(undefined, [kept, s.length], SYNC);
  };

  const metricNames = { __proto__: null };
  let metricCount = 0;
  const metric = (name, value) => {
    if (typeof name !== "string" || name.length === 0 || name.length > C.maxMetricNameChars) {
      throw new TypeErrorCtor("ctx.metric: the name must be a string of 1 to " + C.maxMetricNameChars + " characters");
    }
    // x - x is 0 for every finite number and NaN for NaN and ±Infinity (Number.isFinite may be replaced).
    if (typeof value !== "number" || value - value !== 0) throw new TypeErrorCtor("ctx.metric(" + stringify(name) + "): the value must be a finite number");
    if (metricNames[name] !== true) {
      if (metricCount >= C.maxMetrics) throw limitError("ctx.metric: at most " + C.maxMetrics + " metric names per rollout");
      metricNames[name] = true;
      metricCount++;
    }
    refs.metric.applySync(undefined, [name, value], SYNC);
  };

  const host = freeze({
    chat: (messages, options) => request(refs.chat, "ctx.chat", messages, options),
    judge: (messages, options) => request(refs.judge, "judgeChat", messages, options),
    mcpList: () => send(refs.mcpList, "ctx.mcp.tools", "[]"),
    mcpCall,
    log,
    metric,
  });
  Object.defineProperty(g, ${JSON.stringify(HOST_GLOBAL)}, { value: host, writable: false, configurable: false, enumerable: false });

  function show(v) {
    if (typeof v === "string") return v;
    if (v instanceof ErrorCtor) return typeof v.stack === "string" ? v.stack : StringCtor(v);
    try { const s = stringify(v); if (s !== undefined) return s; } catch {}
    try { return StringCtor(v); } catch { return apply(toStr, v, []); }
  }
  const consoleLog = (...args) => log(args.map(show).join(" "));
  g.console = freeze({ log: consoleLog, info: consoleLog, warn: consoleLog, error: consoleLog, debug: consoleLog });
})();
`;
}
