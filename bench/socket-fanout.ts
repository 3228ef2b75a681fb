/**
 * Fan-out: N socket.io clients (default 50, each its own connection, as N browser tabs) on one live run,
 * each counting every run:event message it receives — raw, before any dedupe — so "exactly once" means
 * every seq 1..last arrived once at every client, none missing and none twice.
 *
 *   node --no-node-snapshot --import tsx bench/socket-fanout.ts [--clients 50] [--rollouts 400] [--rate 40] [--reps 3]
 *
 * Real processes (bench/live-stack.ts): runner → web server (ingestion, socket.io) → the clients, in this
 * process. The clients subscribe (afterSeq 0) once run.started is stored, before the rollouts start, and the
 * delivery latency (receipt − the event's ts) is reported over all clients: p50/p99 per repetition, the
 * median of the repetitions. `uptime` is printed first and last.
 */
import { execSync } from "node:child_process";
import os from "node:os";
import { io, type Socket } from "socket.io-client";
import type { ClientToServerEvents, ServerToClientEvents, SubscribeAck } from "../contracts/socket-events";
import { median, percentile, startLiveStack } from "./live-stack";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const CLIENTS = arg("clients", 50);
const ROLLOUTS = arg("rollouts", 400);
const RATE = arg("rate", 40);
const REPS = arg("reps", 3);
const uptime = () => execSync("uptime").toString().trim();

async function main(): Promise<void> {
  console.log(`socket fan-out: ${CLIENTS} clients, ${ROLLOUTS} rollouts at ${RATE}/s, ${REPS} repetitions; ${os.cpus().length} CPUs; ${uptime()}`);
  const stack = await startLiveStack();
  const p50s: number[] = [];
  const p99s: number[] = [];
  let allExact = true;
  try {
    for (let rep = 1; rep <= REPS; rep++) {
      const runId = await stack.newRun();
      await stack.emit(runId, 0, RATE, false);
      await stack.stored(runId, 1);
      const counts = Array.from({ length: CLIENTS }, () => new Map<number, number>());
      const latencies: number[] = [];
      const sockets: Socket<ServerToClientEvents, ClientToServerEvents>[] = [];
      await Promise.all(
        counts.map(async (count) => {
          const s: Socket<ServerToClientEvents, ClientToServerEvents> = io(stack.webUrl, { transports: ["websocket"], forceNew: true, auth: { token: stack.apiToken } });
          sockets.push(s);
          s.on("run:event", (e) => {
            count.set(e.seq, (count.get(e.seq) ?? 0) + 1);
            latencies.push(Date.now() - e.ts);
          });
          await new Promise<void>((resolve, reject) => s.once("connect", resolve).once("connect_error", reject));
          const ack = await new Promise<SubscribeAck>((resolve) => s.emit("run:subscribe", { runId, afterSeq: 0 }, resolve));
          if (!ack.ok) throw new Error(ack.error);
        }),
      );
      const last = await stack.emit(runId, ROLLOUTS, RATE);
      const deadline = Date.now() + 30_000;
      while (counts.some((c) => c.size < last) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 500)); // a late duplicate would arrive now
      for (const s of sockets) s.close();
      const exact = counts.filter((c) => c.size === last && [...c.entries()].every(([seq, n]) => n === 1 && seq >= 1 && seq <= last)).length;
      const missing = counts.reduce((a, c) => a + (last - c.size), 0);
      const doubled = counts.reduce((a, c) => a + [...c.values()].filter((n) => n > 1).length, 0);
      if (exact !== CLIENTS) allExact = false;
      const p50 = percentile(latencies, 50);
      const p99 = percentile(latencies, 99);
      p50s.push(p50);
      p99s.push(p99);
      console.log(
        `rep ${rep}: ${exact}/${CLIENTS} clients got all ${last} events exactly once (missing ${missing}, duplicated ${doubled}); ` +
          `delivery latency over ${latencies.length} messages: p50 ${p50} ms, p99 ${p99} ms`,
      );
    }
    console.log(`median of ${REPS}: p50 ${median(p50s)} ms, p99 ${median(p99s)} ms; every client exactly once in every repetition: ${allExact}`);
    console.log(uptime());
  } finally {
    await stack.close();
  }
  if (!allExact) process.exit(1);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
