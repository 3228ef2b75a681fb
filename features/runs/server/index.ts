export { handleRunMetricsCsv, handleRunTrajectoriesJsonl, handleRunsTableCsv } from "./export-http";
export { listRunsTable } from "./runs-table";
export { STOPPED_UNREACHABLE, getRun, listEvents, startRun } from "./runs";
