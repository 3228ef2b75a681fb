/**
 * The base model's tokenizer, served in the Hugging Face hub's file protocol at /api/tinker/hf, so the Tinker
 * SDK's `training_client.get_tokenizer()` (transformers' AutoTokenizer.from_pretrained(<base model>)) loads the
 * tokenizer the engine samples with, with no hub: the client sets HF_ENDPOINT=<rollbook>/api/tinker/hf and
 * HF_TOKEN=<a Rollbook API token> (docs/tinker.md).
 *
 *   HEAD|GET /hf/<base model>/resolve/<revision>/<file>   the file (the engine's: GET /tokenizer/files/<file>,
 *                                                         through the runner serving that model), with the
 *                                                         hub's headers: ETag, X-Repo-Commit, X-Linked-Size
 *   anything else (/hf/api/models/…, other files)         404 with X-Error-Code, which the hub client reads
 *                                                         as "not there" and transformers skips
 *
 * Written by hand: these two headers-and-bytes answers are the whole of what hf_hub_download needs (seen with
 * huggingface_hub 2.4 / transformers 5.24); a hub server library would bring a hub. A model the workspace's
 * runners do not serve is not found; the revision is ignored (one snapshot: what the engine has loaded).
 */
import { createHash } from "node:crypto";
import { requireAccess } from "@/server/auth/request";
import { runnerFetch } from "@/server/runner-client";
import type { Db } from "@/server/db-types";
import { servedModels } from "@/features/runners/server";
import { runnerServing } from "./tinker-runner";

const FILE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

function notFound(code: "RepoNotFound" | "EntryNotFound" | "RevisionNotFound", message: string): Response {
  return Response.json({ error: message }, { status: 404, headers: { "x-error-code": code, "x-error-message": message } });
}

/** `segments`: what follows /api/tinker/hf. `auth`: the request as requireAccess reads it (bearer from X-API-Key). */
export async function handleHubRequest(req: Request, auth: Request, segments: readonly string[], db?: Db): Promise<Response> {
  if (req.method !== "GET" && req.method !== "HEAD") return Response.json({ error: `${req.method}: use GET or HEAD` }, { status: 405 });
  const a = await requireAccess(auth, "viewer", { db });
  if (a instanceof Response) return a;
  const at = segments.indexOf("resolve");
  if (segments[0] === "api" || at < 1 || segments.length !== at + 3) return notFound("EntryNotFound", `not served by Rollbook's tokenizer hub: /${segments.join("/")}`);
  const repo = segments.slice(0, at).join("/");
  const file = segments[at + 2]!;
  const served = (await servedModels(a.db, a.workspaceId)) ?? [];
  if (!served.includes(repo)) return notFound("RepoNotFound", `no runner of this workspace serves the base model ${JSON.stringify(repo)}`);
  if (!FILE_NAME.test(file)) return notFound("EntryNotFound", `the tokenizer of ${repo} has no file ${JSON.stringify(file.slice(0, 100))}`);
  const runnerId = await runnerServing(a.db, a.workspaceId, repo);
  const res = await runnerFetch(a.db, runnerId, `/tinker/tokenizer/${encodeURIComponent(file)}`, { method: "GET", signal: AbortSignal.timeout(60_000) });
  if (res.status === 404) return notFound("EntryNotFound", `the tokenizer of ${repo} has no file ${file}`);
  if (!res.ok) return Response.json({ error: `the runner could not read the tokenizer (${res.status})` }, { status: 502 });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const etag = `"${createHash("sha256").update(bytes).digest("hex")}"`;
  const headers = {
    "content-type": "application/octet-stream",
    "content-length": String(bytes.byteLength),
    // The hub client reads the size and the etag from these on a HEAD (where content-length may be dropped).
    "x-linked-size": String(bytes.byteLength),
    etag,
    "x-linked-etag": etag,
    // One snapshot per model name: what the engine has loaded.
    "x-repo-commit": createHash("sha1").update(`rollbook-tokenizer:${repo}`).digest("hex"),
  };
  return new Response(req.method === "HEAD" ? null : bytes, { headers });
}
