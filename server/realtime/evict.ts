/**
 * Taking a removed member's open sockets out of the workspace's run rooms at once, so a live page stops
 * receiving a run the moment its viewer leaves or is removed (a new subscribe is refused anyway). Every
 * socket joins `user:<id>` at connection and remembers the workspace of each run it subscribed to.
 */
import { getIo } from "./io";
import { runRoom, userRoom } from "@contracts/socket-events";

export async function evictFromWorkspace(userId: string, workspaceId: string): Promise<number> {
  const io = getIo();
  if (!io) return 0;
  let left = 0;
  for (const socket of await io.in(userRoom(userId)).fetchSockets()) {
    const subs = socket.data.runWorkspaces ?? {};
    for (const [runId, ws] of Object.entries(subs)) {
      if (ws !== workspaceId) continue;
      socket.leave(runRoom(runId));
      delete subs[runId];
      left++;
    }
  }
  return left;
}
