export { recordRunnerAnswer, recordRunnerFailure, runnersOf } from "./runner-pool";
export { seesRunnerDetails, type RunnerViewer } from "./runner-visibility";
