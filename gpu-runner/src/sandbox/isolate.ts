/**
 * Opens a sandbox for one call into user code, inside a sandbox process (worker/main.ts): a fresh V8 isolate
 * (isolated-vm) with a heap limit, the glue (bootstrap.ts) and the experiment's bundle loaded, and the entry
 * points the bundle installed ready to call. Every rollout gets its own isolate, so one rollout's hang or
 * memory bomb cannot touch another; the process around it is what keeps a V8 crash from reaching the
 * runner. The bundle's V8 code cache is kept per bundle hash: later isolates skip parsing its ~800 KB (the
 * SDK runtime and zod), ~30 ms → ~10 ms per rollout.
 *
 * The process must run Node with `--no-node-snapshot` (isolated-vm's requirement on Node ≥ 20).
 */
import ivm from "isolated-vm";
import type { LimitsConfig } from "../../../contracts";
import { BOOTSTRAP_FILENAME, BRIDGE_FUNCTIONS, REF_GLOBAL_PREFIX, bootstrapSource, type BridgeFunction } from "./bootstrap";
import { Watchdog } from "./watchdog";
import { ENTRY_FUNCTIONS, type EntryFunction } from "./worker/protocol";

export const BUNDLE_FILENAME = "experiment.js";
const ENTRY_GLOBAL = "__rollbook_entry";

/** A compiled experiment as the sandbox process knows it. */
export interface Bundle {
  hash: string;
  js: string;
}

const codeCache = new Map<string, ivm.ExternalCopy<ArrayBuffer>>();

export interface Sandbox {
  isolate: ivm.Isolate;
  watchdog: Watchdog;
  /** Calls an entry point with copied arguments; resolves with its copied (plain) result. */
  call(fn: EntryFunction, args: unknown[], cpuMs?: number): Promise<unknown>;
  dispose(): void;
}

export async function openSandbox(
  bundle: Bundle,
  limits: LimitsConfig,
  refs: Record<BridgeFunction, ivm.Reference>,
  signal?: AbortSignal,
  onCatastrophicError?: (message: string) => void,
): Promise<Sandbox> {
  const isolate = new ivm.Isolate({ memoryLimit: limits.memory_mb, ...(onCatastrophicError ? { onCatastrophicError } : {}) });
  const watchdog = new Watchdog(isolate, limits, signal);
  let context: ivm.Context | undefined;
  const entry = new Map<EntryFunction, ivm.Reference>();
  const dispose = () => {
    watchdog.dispose();
    for (const ref of entry.values()) ref.release();
    try {
      context?.release();
    } catch {
      // already gone with its isolate
    }
    if (!isolate.isDisposed) isolate.dispose();
  };
  try {
    context = await watchdog.guard(isolate.createContext());
    const jail = context.global;
    await jail.set("globalThis", jail.derefInto());
    for (const name of BRIDGE_FUNCTIONS) await jail.set(`${REF_GLOBAL_PREFIX}${name}`, refs[name]);
    const cpu = { timeout: backstopMs(limits, limits.cpu_timeout_ms) };
    watchdog.startPhase();
    const glue = await watchdog.guard(isolate.compileScript(bootstrapSource(limits), { filename: BOOTSTRAP_FILENAME }));
    await watchdog.guard(glue.run(context, cpu)).finally(() => glue.release());

    const cached = codeCache.get(bundle.hash);
    const script = await watchdog.guard(
      isolate.compileScript(bundle.js, { filename: BUNDLE_FILENAME, ...(cached ? { cachedData: cached } : { produceCachedData: true }) }),
    );
    // isolated-vm's typings leave out the cached data compileScript does return.
    const produced = (script as ivm.Script & ivm.CachedDataResult).cachedData;
    if (!cached && produced) codeCache.set(bundle.hash, produced);
    // Top-level code of the user's modules runs here (under the CPU limit like any other call).
    await watchdog.guard(script.run(context, cpu)).finally(() => script.release());

    const entryRef = await watchdog.guard(jail.get(ENTRY_GLOBAL, { reference: true }));
    try {
      if (entryRef.typeof !== "object") throw new Error("the experiment's bundle did not install its entry points");
      for (const name of ENTRY_FUNCTIONS) entry.set(name, await watchdog.guard(entryRef.get(name, { reference: true })));
    } finally {
      entryRef.release();
    }
  } catch (err) {
    const failure = watchdog.asStop(err);
    dispose();
    throw failure;
  }
  return {
    isolate,
    watchdog,
    call: (fn, args, cpuMs = limits.cpu_timeout_ms) => {
      watchdog.startPhase(cpuMs);
      const ref = entry.get(fn)!;
      return watchdog.guard(ref.apply(undefined, args, { timeout: backstopMs(limits, cpuMs), arguments: { copy: true }, result: { promise: true, copy: true } }));
    },
    dispose,
  };
}

/**
 * isolated-vm's own `timeout` for one synchronous run counts time inside the isolate, loaded machine or not
 * (watchdog.ts, cpuNs): the CPU limit is the watchdog's, and this is only a backstop should its timer not
 * run, at a time by which the wall-clock limit has passed anyway.
 */
function backstopMs(limits: LimitsConfig, cpuMs: number): number {
  return Math.max(cpuMs, limits.rollout_timeout_ms);
}
