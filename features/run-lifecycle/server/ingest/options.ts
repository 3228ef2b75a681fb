/** What ingestion is told at construction, shared by the service and the followers it makes. */
import type { RunEvent } from "@contracts";
import type { RunnerHandle } from "@/server/runner-client";
import type { DatabaseProbe } from "@/server/realtime/delivery-health";
import type { IngestResult } from "./projection";

export type IngestOptions = {
  /** The most events one transaction stores (a run whose buffer holds more stores it in several). */
  maxBatch?: number;
  /** How often to look for running runs nobody follows and for runs their runner lost. */
  scanMs?: number;
  /**
   * RUNNER_LOST_AFTER_MS: a run that sent nothing for this long is checked with its runner: a runner that
   * does not answer makes it `lost` (visible, not terminal), one that answers without it fails it
   * ("runner lost the run"), one that still has it keeps it running.
   */
  lostAfterMs?: number;
  maxBackoffMs?: number;
  /**
   * ART_CLIENT_SILENT_MS: an ART run (no runner; its client logs its steps, features/art) whose client sent
   * nothing for this long is marked lost. Default 30 minutes.
   */
  artClientSilentMs?: number;
  /**
   * INGEST_LEASE_MS: how long this process's lease on a run lasts without renewal (renewed every third of
   * it). A killed process's runs are taken over by another one within about this long (lease.ts).
   */
  leaseMs?: number;
  /** This process's lease holder id (default: host, pid and a random part). */
  holder?: string;
  runnerFor: (runnerId: string) => Promise<RunnerHandle>;
  log?: (msg: string) => void;
  /** Called after each batch this process stored (tests count who ingested what). */
  onStored?: (runId: string, batch: RunEvent[], res: IngestResult) => void;
  /**
   * Told of every database round trip ingestion makes (lease ticks, stored batches): what the pages' "live"
   * indicator says (server/realtime/delivery-health.ts).
   */
  database?: DatabaseProbe;
};

export type FollowerOptions = Required<Omit<IngestOptions, "log" | "onStored" | "holder" | "database" | "artClientSilentMs">> &
  Pick<IngestOptions, "onStored" | "database"> & { log: (msg: string) => void };
