export { DeliveryTracker, deliveryView } from "./components/delivery-view";
export { RolloutErrorView } from "./components/rollout-error";
export { filterFromParams, matchesFilter } from "./components/rollout-filter";
export { RewardValue, taskPreview } from "./components/rollout-list";
export { runActions } from "./components/run-actions";
export { followRunLive } from "./components/run-live";
export { runPollInterval } from "./components/run-poll";
export { applyEvents, initialRunState, runReducer, type Rollout, type RunViewState } from "./components/run-state";
