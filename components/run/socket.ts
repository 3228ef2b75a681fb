"use client";
/** One socket.io connection per tab (same origin as the page), typed with the server's event maps. */
import { io, type Socket } from "socket.io-client";
import type { ClientToServerEvents, ServerToClientEvents } from "@/server/realtime/socket-events";

export type RollbookSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

let socket: RollbookSocket | null = null;

export function getSocket(): RollbookSocket {
  socket ??= io({ transports: ["websocket", "polling"], reconnectionDelayMax: 5_000 });
  return socket;
}
