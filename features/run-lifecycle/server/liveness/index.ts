/** Run liveness: the supervisor that decides "lost", and the runner heartbeat that feeds it. */
export { RunnerHeartbeat, type RunnerHeartbeatOptions } from "./heartbeat";
export { LivenessSupervisor, type FollowedRun, type FollowedStream, type LivenessOptions } from "./supervisor";
