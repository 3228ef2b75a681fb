/** OpenAI-compatible chat with a run's checkpoint or a base model (server/http/openai-api.ts). */
import { handleChatCompletions } from "@/server/http/openai-api";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export const POST = (req: Request): Promise<Response> => handleChatCompletions(req);
