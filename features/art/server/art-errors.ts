/**
 * Errors in the shape ART's client reads (it is an OpenAI SDK client: `{"error": {message, type, param,
 * code}}`, raised as BadRequestError, NotFoundError, …), and zod issues as one message naming the field the
 * way a Python user reads it: `trajectory_groups[2].trajectories[0].reward: expected number, received string`.
 */
import type { z } from "zod";
import { escapeKey } from "@contracts/text-rules";
import { openaiError } from "@/features/openai-api/server";

export const artError = openaiError;

/** A zod path as Python would index it: `a[2].b` (a key's control characters escaped). */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const k of path) {
    if (typeof k === "number") out += `[${k}]`;
    else out += out === "" ? escapeKey(String(k)) : `.${escapeKey(String(k))}`;
  }
  return out;
}

/** The first issue, named by its field ("Invalid input: " dropped: the field says where). */
export function issueMessage(error: z.ZodError, prefix = ""): { message: string; param: string | null } {
  const issue = error.issues[0]!;
  const param = fieldPath([...(prefix ? [prefix] : []), ...issue.path]) || null;
  const why = issue.message.replace(/^Invalid input: /, "");
  const more = error.issues.length > 1 ? ` (and ${error.issues.length - 1} more problem${error.issues.length > 2 ? "s" : ""})` : "";
  return { message: `${param ?? "body"}: ${why}${more}`, param };
}

/** 400 naming the first bad field. */
export function badBody(error: z.ZodError, prefix = ""): Response {
  const { message, param } = issueMessage(error, prefix);
  return artError(400, message, param);
}
