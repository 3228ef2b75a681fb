/** Conversions between stored rows and the shared contracts (the runner's RunEvent and Trajectory shapes). */
import { type RunEvent, type RunKind, type Trajectory } from "@contracts";
import type { Prisma, RunKind as DbRunKind } from "@/generated/prisma/client";

export const toDbKind = (kind: RunKind): DbRunKind => (kind === "dry-run" ? "dry_run" : kind);
export const fromDbKind = (kind: DbRunKind): RunKind => (kind === "dry_run" ? "dry-run" : kind);

export function eventToRow(runId: string, e: RunEvent) {
  return {
    runId,
    seq: e.seq,
    type: e.type,
    payload: e.payload as Prisma.InputJsonValue,
    ts: new Date(e.ts),
  };
}

export function rowToEvent(row: { runId: string; seq: number; type: string; payload: Prisma.JsonValue; ts: Date; attempt?: number | null }): RunEvent {
  return {
    run_id: row.runId,
    seq: row.seq,
    ts: row.ts.getTime(),
    // Absent (not null) for events logged before attempts, as the runner's own log has them.
    ...(row.attempt != null ? { attempt: row.attempt } : {}),
    type: row.type,
    payload: row.payload,
  } as RunEvent;
}

export function trajectoryToRow(runId: string, seq: number, t: Trajectory) {
  return {
    id: t.id,
    runId,
    seq,
    step: t.step,
    group: t.group,
    taskIndex: t.task_index,
    split: t.split,
    task: (t.task ?? null) as Prisma.InputJsonValue,
    messages: t.messages as Prisma.InputJsonValue,
    reward: t.reward,
    metrics: t.metrics as Prisma.InputJsonValue,
    error: (t.error ?? undefined) as Prisma.InputJsonValue | undefined,
    model: t.model,
    tokens: t.tokens as Prisma.InputJsonValue,
    timings: t.timings as Prisma.InputJsonValue,
    logs: t.logs as Prisma.InputJsonValue,
  };
}

export type StoredTrajectory = Trajectory & { seq: number };

export function rowToTrajectory(r: {
  id: string;
  seq: number;
  step: number;
  group: number;
  taskIndex: number;
  split: string;
  task: Prisma.JsonValue;
  messages: Prisma.JsonValue;
  reward: number | null;
  metrics: Prisma.JsonValue;
  error: Prisma.JsonValue;
  model: string;
  tokens: Prisma.JsonValue;
  timings: Prisma.JsonValue;
  logs: Prisma.JsonValue;
}): StoredTrajectory {
  return {
    id: r.id,
    seq: r.seq,
    step: r.step,
    group: r.group,
    task_index: r.taskIndex,
    split: r.split === "val" ? "val" : "train",
    task: r.task,
    messages: r.messages as Trajectory["messages"],
    reward: r.reward,
    metrics: (r.metrics ?? {}) as Trajectory["metrics"],
    error: (r.error ?? null) as Trajectory["error"],
    model: r.model,
    tokens: r.tokens as Trajectory["tokens"],
    timings: r.timings as Trajectory["timings"],
    logs: (r.logs ?? []) as string[],
  };
}
