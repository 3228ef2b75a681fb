export { handleCheckpointDownload } from "./checkpoint-download";
export { errorMessage, forwardChat, resolveModel, workspaceBaseModels } from "./checkpoints";
