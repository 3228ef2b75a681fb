/**
 * Ingestion, by job: projection.ts stores a batch of a run's events (events → rows, idempotent), emit.ts
 * hands what was new to the run's room, follower.ts follows one run's stream on its runner, service.ts owns
 * the followers and their leases (lease.ts). Whether a quiet run's runner is alive is ../liveness's call.
 */
export { ingestEvents, storableStrings, type IngestResult } from "./projection";
export { ingestAndEmit } from "./emit";
export { IngestService } from "./service";
export type { IngestOptions } from "./options";
