export { handleRunEvents } from "./run-events-http";
