export { handleCheckpointDownload } from "./checkpoint-download";
export { errorMessage, forwardChat, resolveBaseModel, resolveModel, type ResolvedModel } from "./checkpoints";
