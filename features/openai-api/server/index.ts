export { handleChatCompletions, handleModels } from "./openai-api";
