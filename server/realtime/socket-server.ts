/**
 * socket.io handlers: `run:subscribe` joins the run's room FIRST, then sends the stored events after the
 * client's seq from Postgres, then the run's status; live events reach the room as ingestion stores them.
 * Joining before reading means an event stored meanwhile is either in the read or delivered live (maybe
 * both: clients dedupe by seq) — never lost. The last page of the tail and the status are read in one
 * repeatable-read transaction, so a finished status always comes with the complete tail before it.
 *
 * Who may listen: the handshake must carry a session cookie or an API token (`auth: { token }`), checked
 * once per connection; every run:subscribe checks that the user is a member of the run's workspace (any
 * role), and answers "not found" otherwise — the same answer as for a run that does not exist. The origin
 * is checked before the handshake (server/index.ts, allowRequest).
 */
import { formatZodIssues, servedEvent, type RunStatus } from "@contracts";
import { findTextProblem } from "@contracts/text-rules";
import { rowToEvent } from "../run-convert";
import type { Db } from "../db-types";
import { resolvePrincipal, toHeaders } from "../auth/principal";
import { roleIn } from "../auth/workspace-access";
import type { DeliveryHealth } from "./delivery-health";
import { type RollbookIo } from "./io";
import { RunSubscribeInput, RunUnsubscribeInput, runRoom, userRoom, type SubscribeAck } from "@contracts/socket-events";

const PAGE = 500;

/** @param delivery this process's delivery health: a subscriber hears it at once, before any database read. */
export function attachRealtime(io: RollbookIo, getDb: () => Promise<Db>, delivery?: DeliveryHealth): void {
  io.use((socket, next) => {
    void (async () => {
      const headers = toHeaders(socket.request.headers);
      const token = (socket.handshake.auth as { token?: unknown } | undefined)?.token;
      if (typeof token === "string" && token) headers.set("authorization", `Bearer ${token}`);
      const principal = await resolvePrincipal(await getDb(), headers);
      if (!principal) return next(new Error("unauthorized: sign in first"));
      socket.data.userId = principal.user.id;
      socket.data.tokenWorkspaceId = principal.tokenWorkspaceId;
      next();
    })().catch((e: unknown) => {
      console.error("[realtime] handshake:", e);
      next(new Error("could not check the credentials"));
    });
  });

  io.on("connection", (socket) => {
    if (socket.data.userId) void socket.join(userRoom(socket.data.userId));
    socket.on("run:subscribe", async (raw, ack) => {
      const reply = (res: SubscribeAck) => {
        if (typeof ack === "function") ack(res);
      };
      // As at every door: NUL is named (Postgres cannot take it), then the shape, field by field.
      const problem = findTextProblem(raw);
      if (problem) return reply({ ok: false, error: `run:subscribe: ${problem}` });
      const parsed = RunSubscribeInput.safeParse(raw);
      if (!parsed.success) return reply({ ok: false, error: `run:subscribe needs { runId: string, afterSeq: number }: ${formatZodIssues(parsed.error, "", "input").join("; ")}` });
      const { runId } = parsed.data;
      let after = parsed.data.afterSeq;
      try {
        const db = await getDb();
        const target = await db.run.findUnique({ where: { id: runId }, select: { workspaceId: true } });
        const { userId, tokenWorkspaceId } = socket.data;
        const allowed =
          target && userId && (!tokenWorkspaceId || tokenWorkspaceId === target.workspaceId) && (await roleIn(db, userId, target.workspaceId));
        if (!allowed) return reply({ ok: false, error: `run ${runId} not found` });
        socket.data.runWorkspaces = { ...socket.data.runWorkspaces, [runId]: target.workspaceId };
        await socket.join(runRoom(runId));
        if (delivery) socket.emit("run:delivery", delivery.messageFor(runId));
        for (;;) {
          const [run, rows] = await db.$transaction(
            [
              db.run.findUniqueOrThrow({ where: { id: runId }, select: { status: true, error: true, lastSeq: true, attempt: true } }),
              db.runEvent.findMany({ where: { runId, seq: { gt: after } }, orderBy: { seq: "asc" }, take: PAGE }),
            ],
            { isolationLevel: "RepeatableRead" },
          );
          for (const row of rows) socket.emit("run:event", servedEvent(rowToEvent(row)));
          after = rows.at(-1)?.seq ?? after;
          if (rows.length < PAGE || !socket.connected) {
            const status = run.status as RunStatus;
            socket.emit("run:status", { runId, status, error: run.error, lastSeq: run.lastSeq, attempt: run.attempt });
            return reply({ ok: true, lastSeq: run.lastSeq, status, attempt: run.attempt });
          }
        }
      } catch (e) {
        console.error(`[realtime] run:subscribe ${runId}:`, e);
        reply({ ok: false, error: "could not read the run's events", retry: true });
      }
    });

    socket.on("run:unsubscribe", (raw) => {
      const parsed = RunUnsubscribeInput.safeParse(raw);
      if (parsed.success) void socket.leave(runRoom(parsed.data.runId));
    });
  });
}
