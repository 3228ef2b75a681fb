export { kickDispatch } from "./dispatch-kick";
export { dispatcherFor, queuePosition, queuePositions } from "./dispatcher";
export { IngestService, ingestAndEmit, ingestEvents } from "./ingest";
export { announce, announceQueued, createRunRecord, loseRun, recordSignOfLife, recoverRun, stopRun } from "./lifecycle/index";
export { resumeRun } from "./run-resume";
export { RunnerHeartbeat } from "./liveness";
