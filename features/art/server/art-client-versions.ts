/**
 * The one client combination known to break ART on any backend: openpipe-art 0.5.x beside openai 3.x (what a
 * plain `pip install openpipe-art` picks today). ART's `model.openai_client()` then fails inside the client,
 * before any request ("unsupported operand type(s) for +: 'float' and 'Timeout'": ART hands an httpx.Timeout to
 * openai 3's transport), so Rollbook never sees the failing call and cannot answer it. What it does see is
 * ART's own client (art.serverless.client.Client, built on openai's base client) registering the model: its
 * User-Agent is `Client/Python <openai version>` and X-Stainless-Package-Version the openai version. That
 * first request is refused with the fix, instead of a confusing failure in every rollout later.
 *
 * ART_ALLOW_OPENAI3=true lets it through (for an openpipe-art release that works with openai 3).
 */
import { env } from "@/server/env";

export const OPENAI3_FIX =
  "your ART client runs on openai {version}: with openpipe-art 0.5.x, model.openai_client() then fails inside the client " +
  "in every rollout (\"unsupported operand type(s) for +: 'float' and 'Timeout'\"). Install openai 2.x beside it: " +
  "pip install \"openai>=2,<3\" (docs/art.md, Client versions). An operator whose openpipe-art works with openai 3 sets ART_ALLOW_OPENAI3=true";

/** The fix to answer with when the request is ART's own client on openai ≥ 3; null otherwise. */
export function openai3Problem(req: Request): string | null {
  if (env().ART_ALLOW_OPENAI3) return null;
  const agent = req.headers.get("user-agent") ?? "";
  if (!/^Client\/Python /.test(agent)) return null; // ART's client class; a user's own OpenAI client is not it
  const version = req.headers.get("x-stainless-package-version") ?? agent.slice("Client/Python ".length);
  const major = /^(\d+)\./.exec(version.trim());
  if (!major || Number(major[1]) < 3) return null;
  return OPENAI3_FIX.replace("{version}", version.trim().slice(0, 32));
}
