export { handleArtRequest } from "./art-api";
export { ensureClientExperiment } from "./art-experiment";
export { appendEvents } from "./art-log";
