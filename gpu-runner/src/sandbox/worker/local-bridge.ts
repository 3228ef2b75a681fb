/**
 * The bridge as the isolate sees it from inside the sandbox process: one ivm.Reference per bridge function
 * (bootstrap.ts turns them into `__rollbook_host`). Model, judge and MCP calls are forwarded to the runner
 * as `host` requests and answered with its envelope; ctx.log and ctx.metric are kept here, capped, and
 * streamed to the runner in batches (at most every RECORD_FLUSH_MS, and before every answer), so a flood of
 * them costs this process, not the runner's event loop.
 *
 * No function here ever throws or rejects: a host function that rejects while the isolate awaits it
 * surfaces in this process as an unhandled rejection (an isolated-vm quirk), which would end it.
 */
import ivm from "isolated-vm";
import { SANDBOX_CAPS } from "../caps";
import type { BridgeFunction } from "../bootstrap";
import type { FromSandbox, RemoteFunction } from "./protocol";

const RECORD_FLUSH_MS = 100;

export interface LocalBridge {
  refs: Record<BridgeFunction, ivm.Reference>;
  /** The runner's answer to request `id`. */
  reply(id: number, envelope: string): void;
  /** Send what ctx.log and ctx.metric recorded since the last flush. */
  flush(): void;
  /** The sandbox is closing: pending requests are answered "ended", later calls too; references released. */
  close(): void;
}

const ended = (what: string) => JSON.stringify({ ok: false, name: "Error", message: `${what} was called after the rollout ended` });

export function createLocalBridge(sid: number, send: (m: FromSandbox) => void): LocalBridge {
  const waiting = new Map<number, (envelope: string) => void>();
  let nextId = 0;
  let closed = false;

  const remote =
    (fn: RemoteFunction) =>
    (json: unknown): Promise<string> => {
      if (closed) return Promise.resolve(ended(fn));
      if (typeof json !== "string") return Promise.resolve(JSON.stringify({ ok: false, name: "TypeError", message: `${fn}: malformed request` }));
      const id = nextId++;
      return new Promise<string>((resolve) => {
        waiting.set(id, resolve);
        flush(); // the runner sees what was logged before the call, in order
        send({ t: "host", sid, id, fn, json });
      });
    };

  let logLines = 0;
  let logs: string[] = [];
  const metrics = new Map<string, number>();
  const metricNames = new Set<string>();
  let flushTimer: NodeJS.Timeout | null = null;
  const scheduleFlush = () => {
    flushTimer ??= setTimeout(flush, RECORD_FLUSH_MS);
  };

  const log = (line: unknown, length: unknown): void => {
    if (closed || typeof line !== "string") return;
    const { maxLogLines, maxLogLineChars } = SANDBOX_CAPS;
    if (logLines > maxLogLines) return;
    logLines++;
    if (logLines > maxLogLines) logs.push(`(log limit of ${maxLogLines} lines reached; later lines dropped)`);
    else {
      // The glue sends the first maxLogLineChars characters and the line's full length.
      const total = typeof length === "number" && Number.isFinite(length) && length > line.length ? length : line.length;
      const kept = line.length > maxLogLineChars ? line.slice(0, maxLogLineChars) : line;
      logs.push(total > kept.length ? `${kept}… (${total - kept.length} more characters)` : kept);
    }
    scheduleFlush();
  };

  const metric = (name: unknown, value: unknown): void => {
    // The glue checked these and threw in user code; this guards the record all the same.
    if (closed || typeof name !== "string" || name.length === 0 || name.length > SANDBOX_CAPS.maxMetricNameChars) return;
    if (typeof value !== "number" || !Number.isFinite(value)) return;
    if (!metricNames.has(name)) {
      if (metricNames.size >= SANDBOX_CAPS.maxMetrics) return;
      metricNames.add(name);
    }
    metrics.set(name, value);
    scheduleFlush();
  };

  function flush(): void {
    if (flushTimer) clearTimeout(flushTimer);
    flushTimer = null;
    if (logs.length === 0 && metrics.size === 0) return;
    send({ t: "record", sid, logs, metrics: [...metrics] });
    logs = [];
    metrics.clear();
  }

  const fns: Record<BridgeFunction, (...args: never[]) => unknown> = {
    chat: remote("chat"),
    judge: remote("judge"),
    mcpList: remote("mcpList"),
    mcpCall: remote("mcpCall"),
    log,
    metric,
  };
  const refs = Object.fromEntries(Object.entries(fns).map(([k, fn]) => [k, new ivm.Reference(fn)])) as Record<BridgeFunction, ivm.Reference>;

  return {
    refs,
    reply: (id, envelope) => {
      const resolve = waiting.get(id);
      waiting.delete(id);
      resolve?.(envelope);
    },
    flush,
    close: () => {
      if (closed) return;
      flush();
      closed = true;
      for (const resolve of waiting.values()) resolve(ended("the bridge"));
      waiting.clear();
      for (const ref of Object.values(refs)) ref.release();
    },
  };
}
