export { runColor } from "./components/colors";
export { CompareWith } from "./components/compare-with";
