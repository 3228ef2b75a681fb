/**
 * The sandbox's glue, as source text evaluated inside each fresh isolate before the experiment's bundle. It
 * turns the host's ivm.References (set as a temporary global and deleted here at once) into the bridge the
 * SDK runtime uses (`__rollbook_host`, see gpu-runner/sdk/runtime/host.ts) and defines `console`. Every call
 * copies plain data across the boundary in both directions; the host validates every argument again, caps
 * everything and bounds the calls in flight, so user code that calls the bridge itself gains nothing.
 */

export const BOOTSTRAP_FILENAME = "rollbook-sandbox.js";
/** Each host reference is set as `__rollbook_ref_<name>` and taken (and deleted) by the glue at once. */
export const REF_GLOBAL_PREFIX = "__rollbook_ref_";
export const HOST_GLOBAL = "__rollbook_host";

/** The host functions a sandbox gets (each an ivm.Reference to a host function). */
export const BRIDGE_FUNCTIONS = ["chat", "judge", "mcpList", "mcpCall", "log", "metric"] as const;
export type BridgeFunction = (typeof BRIDGE_FUNCTIONS)[number];

export function bootstrapSource(): string {
  return `"use strict";
(() => {
  const g = globalThis;
  const refs = {};
  for (const name of ${JSON.stringify(BRIDGE_FUNCTIONS)}) {
    const key = ${JSON.stringify(REF_GLOBAL_PREFIX)} + name;
    refs[name] = g[key];
    delete g[key];
  }
  // Captured now: user code may overwrite globals later, and that must not break the glue.
  const freeze = Object.freeze, stringify = JSON.stringify, toStr = Object.prototype.toString, ErrorCtor = Error;
  const ASYNC = { arguments: { copy: true }, result: { promise: true, copy: true } };
  const call = (ref, args) => ref.apply(undefined, args, ASYNC);
  const host = freeze({
    chat: (messages, options) => call(refs.chat, [messages, options]),
    judge: (messages, options) => call(refs.judge, [messages, options]),
    mcpList: () => call(refs.mcpList, []),
    mcpCall: (server, tool, args) => call(refs.mcpCall, [server, tool, args]),
    log: (line) => { refs.log.applySync(undefined, [typeof line === "string" ? line : String(line)]); },
    metric: (name, value) => { refs.metric.applySync(undefined, [name, value], { arguments: { copy: true } }); },
  });
  Object.defineProperty(g, ${JSON.stringify(HOST_GLOBAL)}, { value: host, writable: false, configurable: false, enumerable: false });

  function show(v) {
    if (typeof v === "string") return v;
    if (v instanceof ErrorCtor) return typeof v.stack === "string" ? v.stack : String(v);
    try { const s = stringify(v); if (s !== undefined) return s; } catch {}
    try { return String(v); } catch { return toStr.call(v); }
  }
  const log = (...args) => host.log(args.map(show).join(" "));
  g.console = freeze({ log, info: log, warn: log, error: log, debug: log });
})();
`;
}
