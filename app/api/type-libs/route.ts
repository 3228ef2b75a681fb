/**
 * The declarations user code is type-checked against — the SDK as node_modules/rollbook/index.d.ts, the
 * sandbox's globals and zod's .d.ts closure — from the same list the runner checks with (sdkTypeLibs), so
 * the editor and the runner agree on every type. About 250 KB: computed once per process, and revalidated
 * by the browser with an ETag rather than sent on every page load.
 */
import { createHash } from "node:crypto";
import { sdkTypeLibs, type TypeLib } from "@/gpu-runner/sdk/type-libs";

// Per request (If-None-Match), not prerendered at build time.
export const dynamic = "force-dynamic";

let cached: { body: string; etag: string } | undefined;

function payload() {
  if (!cached) {
    const libs: TypeLib[] = sdkTypeLibs();
    const body = JSON.stringify({ libs });
    cached = { body, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"` };
  }
  return cached;
}

export function GET(req: Request): Response {
  const { body, etag } = payload();
  const headers = { ETag: etag, "Cache-Control": "no-cache" };
  if (req.headers.get("if-none-match") === etag) return new Response(null, { status: 304, headers });
  return new Response(body, { headers: { ...headers, "Content-Type": "application/json; charset=utf-8" } });
}
