export { RescoreRunInput, rescoreRun } from "./rescore";
