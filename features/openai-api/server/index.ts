export { handleChatCompletions, handleModels } from "./openai-api";
export { openaiError } from "./openai-api";
