export { RescoreButton } from "./components/rescore-panel";
