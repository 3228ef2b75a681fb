/**
 * Better Auth's endpoints at /api/auth/*, behind our own checks:
 * - the origin: Better Auth skips its own when a request carries no cookie (a sign-in form posted from
 *   another site would log the victim into the attacker's account), so every browser request from an
 *   untrusted origin is refused here first;
 * - the body: at most MAX_AUTH_REQUEST_BYTES (64 KB), JSON nested at most MAX_JSON_DEPTH, no NUL in any
 *   field and no control character in the one-line ones (a name, an email: contracts/text-rules.ts). Better
 *   Auth checks none of these, and a NUL in a sign-up's name reached Postgres ("Failed to create user").
 */
import { findPrototypeKey, MAX_JSON_DEPTH, prototypeKeyMessage } from "@contracts";
import { authFor } from "../auth/auth";
import { originAllowed } from "../auth/origins";
import type { Db } from "../db-types";
import { findTextProblem, type TextPath } from "@contracts/text-rules";
import { capOf, readCappedBody, REFUSAL_HEADERS, refuseBodyOnRead, withBody } from "./body-limit";

/** Fields of Better Auth's bodies that are one line of text (sign-up, update-user, change-email, callbacks). */
const ONE_LINE_FIELDS = new Set(["name", "email", "newEmail", "image", "callbackURL", "newUserCallbackURL", "errorCallbackURL"]);

const refuse = (status: number, message: string, code: string) =>
  Response.json({ message, code }, { status, headers: status === 413 ? REFUSAL_HEADERS : {} });

/** The body's fields as Better Auth will read them (JSON or a form), or null when it is neither. */
function bodyFields(bytes: Uint8Array, contentType: string): unknown {
  const text = new TextDecoder().decode(bytes);
  if (contentType.includes("application/json")) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return null; // Better Auth answers malformed JSON itself
    }
  }
  if (contentType.includes("application/x-www-form-urlencoded")) return Object.fromEntries(new URLSearchParams(text));
  return null;
}

export async function handleAuthRequest(req: Request, db: Db): Promise<Response> {
  if (!originAllowed(req.headers.get("origin"))) {
    return Response.json({ message: "requests from this origin are not allowed" }, { status: 403 });
  }
  const onRead = refuseBodyOnRead(req);
  if (onRead) return refuse(onRead.status, onRead.message, "PAYLOAD_TOO_LARGE");
  if (req.body) {
    const read = await readCappedBody(req, capOf("auth"), { maxJsonDepth: MAX_JSON_DEPTH });
    if (!read.ok) return refuse(read.status, read.message, read.status === 413 ? "PAYLOAD_TOO_LARGE" : "BAD_REQUEST");
    const oneLine = (path: TextPath) => (path.length === 1 && ONE_LINE_FIELDS.has(String(path[0])) ? "line" : "any");
    const fields = bodyFields(read.bytes, req.headers.get("content-type") ?? "");
    const problem = findTextProblem(fields, oneLine);
    if (problem) return refuse(400, problem, "INVALID_INPUT");
    // A "__proto__" field would be dropped or become a prototype as the body is copied (contracts/json-keys.ts).
    const proto = findPrototypeKey(fields);
    if (proto) return refuse(400, `${proto.join(".")}: ${prototypeKeyMessage(String(proto.at(-1)))}`, "INVALID_INPUT");
    req = withBody(req, read.bytes);
  }
  return authFor(db).handler(req);
}
