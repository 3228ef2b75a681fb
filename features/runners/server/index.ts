export { recordRunnerAnswer, recordRunnerFailure, runnersOf } from "./runner-pool";
