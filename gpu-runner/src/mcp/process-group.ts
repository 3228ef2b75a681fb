/**
 * Ending a stdio server for good: the server and everything it spawned. A server is often a launcher
 * (npx → sh → node, uvx → python) and the SDK's StdioClientTransport signals only the process it spawned,
 * so its children would outlive it. We start each server as the leader of its own process group (see
 * stdio-command.ts) and signal the whole group, the way the engine supervisor does. Only groups we
 * started are ever signalled, never processes found by name: a GPU box is shared.
 */

const live = new Set<number>();
let exitHookInstalled = false;

/** Remember a group to kill if the runner exits without closing its hubs (crash, process.exit). */
export function trackGroup(pgid: number): void {
  live.add(pgid);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // "exit" handlers must be synchronous: SIGKILL is all there is time for.
    process.once("exit", () => {
      for (const id of live) signalGroup(id, true, "SIGKILL");
    });
  }
}

export function untrackGroup(pgid: number): void {
  live.delete(pgid);
}

/** Signal the group (or only the process, where it could not get its own group). */
export function signalGroup(pid: number, isGroup: boolean, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(isGroup ? -pid : pid, signal);
    return true;
  } catch {
    return false; // ESRCH: nothing left to signal
  }
}

export function groupAlive(pid: number, isGroup: boolean): boolean {
  return signalGroup(pid, isGroup, 0);
}

// Not unref'd: a caller awaiting close() must keep the process alive until its servers are gone.
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitGone(pid: number, isGroup: boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (groupAlive(pid, isGroup)) {
    if (Date.now() >= deadline) return false;
    await sleep(Math.min(50, Math.max(1, deadline - Date.now())));
  }
  return true;
}

/**
 * After stdin was closed (the MCP way to ask a stdio server to leave): wait `graceMs` for the group to
 * go, then SIGTERM it, another `graceMs`, then SIGKILL. Resolves when the group is gone (or, if even
 * SIGKILL did not empty it within 2 s, e.g. an unreaped zombie, gives up: it returns false).
 */
export async function endGroup(pid: number, isGroup: boolean, graceMs: number): Promise<boolean> {
  try {
    if (await waitGone(pid, isGroup, graceMs)) return true;
    signalGroup(pid, isGroup, "SIGTERM");
    if (await waitGone(pid, isGroup, graceMs)) return true;
    signalGroup(pid, isGroup, "SIGKILL");
    return await waitGone(pid, isGroup, 2_000);
  } finally {
    untrackGroup(pid);
  }
}
