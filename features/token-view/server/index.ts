export { getRolloutTokens } from "./rollout-tokens";
export { fetchTokenLog } from "./run-token-log";
