export { TokensToggle } from "./components/token-view";
