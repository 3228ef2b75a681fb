export { handleRunMetricsCsv, handleRunTrajectoriesJsonl, handleRunsTableCsv } from "./export-http";
export { listRunsTable } from "./runs-table";
export { getRun, listEvents } from "./run-reads";
export { startRun } from "./run-start";
export { STOPPED_UNREACHABLE } from "./run-stop";
