export { RunCharts } from "./components/run-charts";
