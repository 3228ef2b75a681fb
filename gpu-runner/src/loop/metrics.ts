/** Step and eval metrics: shared with the web server (ART runs' steps), so they live in contracts. */
export { computeEvalMetrics, computeStepMetrics, isTrainableGroup, mean, std, type StepTimings } from "../../../contracts/step-metrics";
