export * from "./lifecycle";
export { TRANSITIONS, allowed, statusAfterEvents, type TransitionName, type RunStatusState, type StatusAfterEvents } from "./transitions";
