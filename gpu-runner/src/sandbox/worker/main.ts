/**
 * A sandbox process: a child of the runner that runs one sandbox (one isolate) at a time for it, driven over
 * IPC (protocol.ts). It exists so that whatever V8 does to a process when user code pushes it too far — a
 * fatal "invalid size" error, an out-of-memory abort, a thread parked forever by an isolate isolated-vm gave
 * up on — happens to this process and not to the runner: the runner sees it exit and fails that one rollout.
 * The runner bundles this file with esbuild and starts it with a minimal environment (pool.ts).
 */
import type { LimitsConfig } from "../../../../contracts";
import { SANDBOX_CAPS, capText } from "../caps";
import { openSandbox, type Sandbox } from "../isolate";
import { StopError } from "../watchdog";
import { createLocalBridge, type LocalBridge } from "./local-bridge";
import type { ErrorInfo, FromSandbox, ToSandbox } from "./protocol";

/**
 * The largest result that travels: the scenario's output is JSON inside this JSON (escaping can double it),
 * plus room for the rest (metrics, names). The runner applies limits.max_output_chars exactly.
 */
const maxResultChars = (limits: LimitsConfig) => 2 * limits.max_output_chars + 1_000_000;

interface Session {
  sid: number;
  limits: LimitsConfig;
  bridge: LocalBridge;
  abort: AbortController;
  sandbox: Sandbox | null;
  closed: boolean;
  /** The runner's clock state (a `clock` message may come before the isolate is ready). */
  clockPaused: boolean;
}

const bundles = new Map<string, string>();
let session: Session | null = null;

function send(m: FromSandbox): void {
  process.send?.(m);
}

function errorInfo(err: unknown): ErrorInfo {
  const e = err instanceof Error ? err : new Error(String(err));
  const info: ErrorInfo = {
    name: capText(String(e.name), 200),
    message: capText(String(e.message), SANDBOX_CAPS.maxErrorMessageChars),
  };
  if (typeof e.stack === "string") info.stack = capText(e.stack, SANDBOX_CAPS.maxStackChars);
  return info;
}

function fail(s: Session, err: unknown): void {
  s.bridge.flush();
  send({ t: "failed", sid: s.sid, error: errorInfo(err), stop: err instanceof StopError ? err.reason : null });
}

/**
 * An entry point's result as it may travel: failures' texts capped (user code chose them), and nothing
 * bigger than the output limit allows (the isolate could return anything its heap holds).
 */
function checkResult(value: unknown, limits: LimitsConfig, fn: string): { ok: true; value: unknown } | { ok: false; error: Error } {
  if (value !== null && typeof value === "object" && (value as { ok?: unknown }).ok === false) {
    const f = value as Record<string, unknown>;
    if (typeof f.message === "string") f.message = capText(f.message, SANDBOX_CAPS.maxErrorMessageChars);
    if (typeof f.stack === "string") f.stack = capText(f.stack, SANDBOX_CAPS.maxStackChars);
    if (typeof f.name === "string") f.name = capText(f.name, 200);
  }
  const size = JSON.stringify(value ?? null).length;
  const max = maxResultChars(limits);
  if (size <= max) return { ok: true, value };
  const error = new Error(`${fn} returned ${size.toLocaleString("en")} characters of JSON; limits.max_output_chars is ${limits.max_output_chars.toLocaleString("en")}`);
  error.name = "LimitError";
  return { ok: false, error };
}

function onCatastrophicError(message: string): void {
  // isolated-vm parks the isolate's thread forever after this; nothing in this process can be trusted now.
  // stderr is synchronous for pipes on Linux: the runner reads this line, then sees the process killed.
  process.stderr.write(`rollbook-sandbox: catastrophic isolate error: ${message}\n`);
  process.kill(process.pid, "SIGKILL");
}

async function open(m: Extract<ToSandbox, { t: "open" }>): Promise<void> {
  session?.bridge.close();
  session?.sandbox?.dispose();
  if (m.js !== null) bundles.set(m.hash, m.js);
  const s: Session = { sid: m.sid, limits: m.limits, bridge: createLocalBridge(m.sid, send), abort: new AbortController(), sandbox: null, closed: false, clockPaused: false };
  session = s;
  const js = bundles.get(m.hash);
  try {
    if (js === undefined) throw new Error(`the sandbox process does not hold bundle ${m.hash}`);
    const sandbox = await openSandbox({ hash: m.hash, js }, m.limits, s.bridge.refs, s.abort.signal, onCatastrophicError);
    if (s.closed) return sandbox.dispose();
    s.sandbox = sandbox;
    sandbox.watchdog.setClockPaused(s.clockPaused);
    send({ t: "opened", sid: s.sid });
  } catch (err) {
    if (!s.closed) fail(s, err);
  }
}

async function call(m: Extract<ToSandbox, { t: "call" }>): Promise<void> {
  const s = session;
  if (!s || s.sid !== m.sid || !s.sandbox) return;
  try {
    const value = await s.sandbox.call(m.fn, m.args, m.cpuMs);
    if (s.closed) return;
    const checked = checkResult(value, s.limits, m.fn);
    if (!checked.ok) return fail(s, checked.error);
    s.bridge.flush();
    send({ t: "returned", sid: s.sid, value: checked.value });
  } catch (err) {
    if (!s.closed) fail(s, err);
  }
}

function close(sid: number): void {
  const s = session;
  if (!s || s.sid !== sid) return;
  s.closed = true;
  s.bridge.close();
  s.sandbox?.dispose();
  session = null;
}

function handle(m: ToSandbox): void {
  switch (m.t) {
    case "open":
      void open(m);
      break;
    case "call":
      void call(m);
      break;
    case "reply":
      if (session?.sid === m.sid) session.bridge.reply(m.id, m.envelope);
      break;
    case "clock":
      if (session?.sid === m.sid) {
        session.clockPaused = m.paused;
        session.sandbox?.watchdog.setClockPaused(m.paused);
      }
      break;
    case "abort":
      if (session?.sid === m.sid) session.abort.abort();
      break;
    case "close":
      close(m.sid);
      break;
  }
}

if (!process.send) {
  process.stderr.write("rollbook-sandbox: must be started by the runner, with an IPC channel\n");
  process.exit(1);
}
process.on("message", (m) => handle(m as ToSandbox));
// The runner is gone (exited, crashed or killed): so is the reason to exist.
process.on("disconnect", () => process.exit(0));
send({ t: "ready" });
