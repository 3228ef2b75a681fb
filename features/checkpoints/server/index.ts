export { handleCheckpointDownload } from "./checkpoint-download";
export { errorMessage, forwardChat, resolveBaseModel, resolveModel, type ResolvedModel } from "./checkpoints";
export { bestCheckpoint, bestCheckpoints, evalRewardsByStep, type BestCheckpoint } from "./best-checkpoint";
export { checkpointsExport, handleCheckpointsExport } from "./checkpoints-export";
export { deleteCheckpoints, releaseDeferredDeletes, type DeleteCheckpointsResult } from "./checkpoint-delete";
export { applyCheckpointRetention, checkpointRetentionSettled, scheduleCheckpointRetention, stepsToDelete } from "./checkpoint-retention";
