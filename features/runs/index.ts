export { RunNotes, RunTags } from "./components/run-tags-notes";
export { type RunsListInput } from "./runs-table-query";
export { runName } from "./run-name";
