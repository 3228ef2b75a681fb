"use client";
/** One socket.io connection per tab (same origin as the page), typed with the server's event maps. */
import { io, type Socket } from "socket.io-client";
import type { ClientToServerEvents, ServerToClientEvents } from "@/contracts/socket-events";

export type RollbookSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

let socket: RollbookSocket | null = null;

export function getSocket(): RollbookSocket {
  if (socket) return socket;
  socket = keepReconnecting(io({ transports: ["websocket", "polling"], reconnectionDelayMax: 5_000 }));
  return socket;
}

/**
 * socket.io does not reconnect by itself after the server closed the connection (a web server restart or
 * deploy does that on shutdown): reconnect anyway, so live pages resume.
 */
export function keepReconnecting(s: RollbookSocket): RollbookSocket {
  s.on("disconnect", (reason) => {
    if (reason === "io server disconnect") setTimeout(() => s.connect(), 1_000);
  });
  return s;
}
