export { recordRunnerAnswer, recordRunnerFailure, runnersOf } from "./runner-pool";
export { baseModelProblem, servedModels } from "./served-models";
