/**
 * The ingest lease: with several web processes on one database, exactly one of them follows (ingests and
 * emits) a given run at a time. One IngestLease row per run names its holder and when the lease runs out,
 * in the database's clock (now()), so the processes' clocks never matter.
 *
 * - take: one atomic INSERT ... ON CONFLICT DO UPDATE WHERE the lease has expired (or is already ours), for
 *   many runs in one statement; whoever's statement commits first wins, the others get no row back.
 * - renew: every ttl / 3 the holder extends all its leases in one UPDATE ... WHERE holder = me; a run whose
 *   row did not come back was taken over (after an expiry) and its follower stops.
 * - release: on a graceful shutdown (or when a follower ends) the lease expires at once, so another process
 *   takes the run over at its next scan instead of after the TTL.
 *
 * The lease also carries `emittedSeq`, the highest seq its holder sent to the run's socket room: a holder
 * killed between storing a batch and emitting it would otherwise leave a gap on every open page, so the
 * process that takes the lease over re-sends the stored events after it (pages drop duplicates by seq).
 * Postgres's row-level ON CONFLICT is the whole mechanism: no library adds anything over one statement.
 */
import os from "node:os";
import { randomBytes } from "node:crypto";
import { ACTIVE_RUN_STATUSES } from "@contracts";
import type { Db } from "@/server/db-types";

export interface TakenLease {
  runId: string;
  /** What the previous holder had sent to the room (the run's lastSeq when nobody held it before). */
  emittedSeq: number;
}

/** This process's holder id: readable in the table (host and pid), unique across restarts (random part). */
export function newHolderId(): string {
  return `${os.hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
}

export class IngestLeases {
  constructor(
    private readonly db: Db,
    readonly holder: string,
    readonly ttlMs: number,
  ) {}

  /** Takes (or re-takes) the leases of these runs that are free, expired or already ours; returns those taken. */
  async take(runIds: string[]): Promise<TakenLease[]> {
    if (runIds.length === 0) return [];
    // A new row starts at the run's stored lastSeq: nobody emitted anything the re-send would need to repeat.
    return this.db.$queryRaw<TakenLease[]>`
      INSERT INTO "IngestLease" ("runId", "holder", "expiresAt", "takenAt", "emittedSeq")
      SELECT r."id", ${this.holder}, now() + ${this.ttlMs} * interval '1 millisecond', now(), r."lastSeq"
      FROM "Run" r WHERE r."id" = ANY(${runIds}::text[])
      ON CONFLICT ("runId") DO UPDATE
        SET "holder" = EXCLUDED."holder", "expiresAt" = EXCLUDED."expiresAt",
            "takenAt" = CASE WHEN "IngestLease"."holder" = EXCLUDED."holder" THEN "IngestLease"."takenAt" ELSE now() END
        WHERE "IngestLease"."expiresAt" <= now() OR "IngestLease"."holder" = EXCLUDED."holder"
      RETURNING "runId", "emittedSeq"`;
  }

  /**
   * Extends this process's leases on these runs and records what it has emitted; returns the runs whose
   * lease it still holds (a missing one was taken over: stop following it).
   */
  async renew(emitted: Map<string, number>): Promise<Set<string>> {
    if (emitted.size === 0) return new Set();
    const ids = [...emitted.keys()];
    const seqs = ids.map((id) => emitted.get(id)!);
    const rows = await this.db.$queryRaw<{ runId: string }[]>`
      UPDATE "IngestLease" l
      SET "expiresAt" = now() + ${this.ttlMs} * interval '1 millisecond', "emittedSeq" = GREATEST(l."emittedSeq", v."seq")
      FROM unnest(${ids}::text[], ${seqs}::int[]) AS v("runId", "seq")
      WHERE l."runId" = v."runId" AND l."holder" = ${this.holder}
      RETURNING l."runId"`;
    return new Set(rows.map((r) => r.runId));
  }

  /** Lets go of these runs now (recording what was emitted), so another process need not wait out the TTL. */
  async release(emitted: Map<string, number>): Promise<void> {
    if (emitted.size === 0) return;
    const ids = [...emitted.keys()];
    const seqs = ids.map((id) => emitted.get(id)!);
    await this.db.$executeRaw`
      UPDATE "IngestLease" l SET "expiresAt" = now(), "emittedSeq" = GREATEST(l."emittedSeq", v."seq")
      FROM unnest(${ids}::text[], ${seqs}::int[]) AS v("runId", "seq")
      WHERE l."runId" = v."runId" AND l."holder" = ${this.holder}`;
  }

  /** Rows of runs that have ended and whose lease has run out: nobody will follow them again. */
  async prune(): Promise<number> {
    return this.db.$executeRaw`
      DELETE FROM "IngestLease" l USING "Run" r
      WHERE l."runId" = r."id" AND l."expiresAt" <= now() AND r."status"::text <> ALL(${[...ACTIVE_RUN_STATUSES]}::text[])`;
  }
}
