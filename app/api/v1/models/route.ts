/** OpenAI-compatible model list: the workspace's checkpoints as "<run number>@<step>" and its base models (features/openai-api/server/openai-api.ts). */
import { handleModels } from "@/features/openai-api/server/openai-api";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export const GET = (req: Request): Promise<Response> => handleModels(req);
