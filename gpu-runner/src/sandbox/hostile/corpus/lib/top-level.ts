// Runs at module top level: while the experiment is inspected at start, and in every rollout's isolate
// before the scenario. It looks for a way out and records what it found; the `top-level` case reports it.
const g = globalThis as Record<string, unknown>;

function attempt(f: () => unknown): string {
  try {
    const v = f();
    return typeof v === "string" ? v : typeof v;
  } catch (e) {
    return `threw ${(e as Error).name}`;
  }
}

export const topLevelFindings = {
  process: typeof g.process,
  require: typeof g.require,
  module: typeof g.module,
  // The classic node:vm escape: the Function constructor of an object from outside the context.
  viaThisConstructor: attempt(() => (function (this: unknown) { return this; }).constructor("return typeof process")()),
  viaHostFunction: attempt(() => ((g.__rollbook_host as Record<string, { constructor: FunctionConstructor }>).chat.constructor("return typeof process"))()),
  bridgeRefsLeft: Object.getOwnPropertyNames(g).filter((k) => k.startsWith("__rollbook_ref_")).length,
};
