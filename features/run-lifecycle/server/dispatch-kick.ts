/**
 * "Dispatch now": a run ended or was queued, so a runner may have room. Kept apart from the dispatcher so
 * that what frees slots (the run lifecycle) need not import the dispatcher, which itself writes through the
 * lifecycle: dispatcher.ts registers the kick when it loads (on globalThis: Next's route bundle and the
 * custom server are two module graphs in one process). Before it has loaded nothing can be dispatched, so
 * a kick then has nothing to do.
 */
import type { Db } from "@/server/db-types";

const KICKER = Symbol.for("rollbook.dispatch-kick");

export function setDispatchKicker(kick: (db: Db) => void): void {
  (globalThis as { [KICKER]?: (db: Db) => void })[KICKER] = kick;
}

export function kickDispatch(db: Db): void {
  (globalThis as { [KICKER]?: (db: Db) => void })[KICKER]?.(db);
}
