/** OpenAI-compatible chat with a run's checkpoint or a base model (features/openai-api/server/openai-api.ts). */
import { handleChatCompletions } from "@/features/openai-api/server/openai-api";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export const POST = (req: Request): Promise<Response> => handleChatCompletions(req);
