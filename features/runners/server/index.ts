export { recordRunnerAnswer, recordRunnerFailure, runnersOf } from "./runner-pool";
export { baseModelProblem, servedModels } from "./served-models";
export { seesRunnerDetails, type RunnerViewer } from "./runner-visibility";
