export { handleCheckpointDownload } from "./checkpoint-download";
export { errorMessage, forwardChat, resolveBaseModel, resolveModel, workspaceBaseModels, type ResolvedModel } from "./checkpoints";
