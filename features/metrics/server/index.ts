export { forgetRunColumns } from "./run-series-columns";
export { RunSeriesInput, runSeries, type SeriesX } from "./run-series";
export { refreshStepSeries } from "./step-series";
