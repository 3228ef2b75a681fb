/**
 * The declarations user code is type-checked against — the SDK as node_modules/rollbook/index.d.ts, the
 * sandbox's globals and zod's .d.ts closure — from the same list the runner checks with (sdkTypeLibs), so
 * the editor and the runner agree on every type. About 250 KB: computed once per process, and revalidated
 * by the browser with an ETag rather than sent again on every page load.
 */
import { createHash } from "node:crypto";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { TypeLib } from "@/contracts/sdk/type-libs";

// Per request (If-None-Match), not prerendered at build time.
export const dynamic = "force-dynamic";

/**
 * type-libs.ts is imported at run time, outside Next's bundle: it finds zod's .d.ts files with
 * createRequire(import.meta.url).resolve, which Turbopack rewrites into a module id ("9761.replace is not
 * a function"). The custom server runs under tsx (scripts/start.sh, scripts/e2e-stack.sh), which loads the
 * TypeScript file as the runner does.
 */
async function loadTypeLibs(): Promise<TypeLib[]> {
  const url = pathToFileURL(path.join(process.cwd(), "contracts", "sdk", "type-libs.ts")).href;
  const mod = (await import(/* turbopackIgnore: true */ /* webpackIgnore: true */ url)) as { sdkTypeLibs: () => TypeLib[] };
  return mod.sdkTypeLibs();
}

let cached: Promise<{ body: string; etag: string }> | undefined;

function payload() {
  cached ??= loadTypeLibs().then((libs) => {
    const body = JSON.stringify({ libs });
    return { body, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"` };
  });
  // A failure is not cached: the next request tries again.
  cached.catch(() => (cached = undefined));
  return cached;
}

export async function GET(req: Request): Promise<Response> {
  const { body, etag } = await payload();
  const headers = { ETag: etag, "Cache-Control": "no-cache" };
  if (req.headers.get("if-none-match") === etag) return new Response(null, { status: 304, headers });
  return new Response(body, { headers: { ...headers, "Content-Type": "application/json; charset=utf-8" } });
}
