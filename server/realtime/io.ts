/**
 * The one socket.io server of this process, reachable from both the custom server (server/index.ts) and
 * Next's separately bundled route handlers: a module-level variable would exist once per bundle, so the
 * instance lives on globalThis.
 */
import type { Server } from "socket.io";
import type { ClientToServerEvents, InterServerEvents, ServerToClientEvents, SocketData } from "@contracts/socket-events";

export type RollbookIo = Server<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;

const KEY = Symbol.for("rollbook.io");
type Holder = { [KEY]?: RollbookIo };

export function setIo(io: RollbookIo | undefined): void {
  (globalThis as Holder)[KEY] = io;
}

/** The io server, or undefined where none runs (tests, scripts): emitting is then a no-op. */
export function getIo(): RollbookIo | undefined {
  return (globalThis as Holder)[KEY];
}
