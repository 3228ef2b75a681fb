/**
 * What a run does when an engine call fails: tell an engine restart (the supervisor saw the engine die or
 * stop answering and is bringing it back, ~20 s on CPU) from every other failure, wait through it, and hand
 * back the restart with its reason, so the caller can retry the call once on the new engine (a rollout's
 * model call, a train step) and, when it cannot, say why ("engine restarted: killed by SIGKILL — likely out
 * of memory …") instead of the socket's "terminated".
 *
 * Why it waits for the supervisor rather than retrying blindly: a call that failed because the engine died
 * is worth retrying only once a new engine serves; a call that failed while the engine kept answering (a
 * 4xx, a bad request) must not be retried at all. The supervisor's restart count is the one fact that tells
 * them apart: it is read before the call and again after it failed.
 */
import type { EngineRestart } from "./supervisor";
import { EngineError } from "./client";

/** The engine as a run sees it: the supervisor's restart count and reason, a health probe, and ready. */
export interface EngineWatch {
  /** Restarts the supervisor has begun so far (a run reads it before each call). */
  restarts(): number;
  lastRestart(): EngineRestart | null;
  /** The supervisor is bringing the engine back (or starting it): a call that began meanwhile failed for that. */
  restarting(): boolean;
  /** Resolves when the engine answers /health; rejects when it does not. */
  probe(): Promise<void>;
  /** Resolves when the supervisor has the engine ready; rejects when it gave up on it or `signal` aborted. */
  waitReady(signal: AbortSignal): Promise<void>;
}

/** How long a failed call waits for the supervisor to notice a death before deciding the engine is fine. */
const SETTLE_MS = 20_000;
const POLL_MS = 250;

/** A failure an engine restart can explain: the connection, not the engine's answer (a 4xx names the request). */
export function isTransportFailure(err: unknown): boolean {
  if (err instanceof EngineError) return err.status === null || err.status >= 500;
  // undici's body reader fails with a TypeError ("terminated") when the engine dies mid-response.
  return err instanceof TypeError || (err instanceof Error && /terminated|ECONNRESET|socket|other side closed/i.test(err.message));
}

/**
 * A failure of the connection itself — reset, closed, refused, cut mid-answer — rather than an answer from
 * the engine (a 4xx or 5xx is the engine speaking). Such a call is worth one more try even when the engine
 * never restarted: the engine is fine, only this request's socket was lost (a keep-alive socket the server
 * had just closed, a reset on the way), and the same request, same seed, samples the same answer.
 */
export function isConnectionCut(err: unknown): boolean {
  if (err instanceof EngineError) return err.status === null;
  return isTransportFailure(err);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * After a call that began at restart count `since` failed on the transport: the restart that happened
 * since, once the new engine is ready; or null when the engine kept answering (the failure was not a
 * restart). Rejects when the supervisor gave up on the engine or `signal` aborted.
 */
export async function restartSince(watch: EngineWatch, since: number, signal: AbortSignal, settleMs = SETTLE_MS): Promise<EngineRestart | null> {
  const deadline = Date.now() + settleMs;
  for (;;) {
    if (watch.restarts() > since) {
      await watch.waitReady(signal);
      return watch.lastRestart();
    }
    const answered = await watch.probe().then(
      () => true,
      () => false,
    );
    // The probe may have reached the new engine: only an unchanged count means the engine never went away.
    if (answered && watch.restarts() === since) return null;
    // The call began after the supervisor had already seen the engine die: that restart is this call's cause.
    if (!answered && watch.restarting() && watch.lastRestart()) {
      await watch.waitReady(signal);
      return watch.lastRestart();
    }
    if (Date.now() > deadline) {
      // Dead to every probe and no restart yet: the supervisor restarts after its failed health checks.
      await watch.waitReady(signal);
      return watch.restarts() > since ? watch.lastRestart() : null;
    }
    await sleep(POLL_MS, signal);
  }
}

/** "engine restarted: <reason>", the cause a rollout or step records when a retry did not save it. */
export function restartCause(restart: Pick<EngineRestart, "cause">): string {
  // The cause, not the reason: runs of every workspace read this (supervisor.ts EngineRestart).
  return restart.cause.startsWith("engine ") ? `engine restarted: ${restart.cause.slice("engine ".length)}` : `engine restarted: ${restart.cause}`;
}
