/**
 * A workspace's secrets: API keys its experiments use by name (judge.api_key_secret, `${NAME}` in MCP headers
 * and registered servers' env). Admins set and delete them; anyone in the workspace sees the names, who set
 * each and when, never a value: a value is written once and not shown again (as W&B team secrets and
 * Langfuse's LLM API keys). Stored sealed (server/sealed.ts), bound to the workspace and name.
 */
import { MIN_SECRET_CHARS, SecretName } from "@contracts";
import { z } from "zod";
import { AppError } from "@/server/errors";
import { seal, unseal } from "@/server/sealed";
import type { DbOrTx } from "@/server/db-types";

const PURPOSE = "rollbook workspace secrets v1";
const bound = (workspaceId: string, name: string) => `${workspaceId}/${name}`;

export const SecretInput = z.object({
  name: SecretName,
  value: z
    .string()
    .min(MIN_SECRET_CHARS, `value: at least ${MIN_SECRET_CHARS} characters (a shorter value could not be told apart from ordinary text in logs, where it is masked)`)
    .max(10_000, "value: at most 10,000 characters")
    // A secret is one line: a pasted trailing newline would be sent in an Authorization header.
    .refine((v) => ![...v].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f), "value: control characters and line breaks are not allowed"),
});

export async function listSecrets(db: DbOrTx, workspaceId: string) {
  const rows = await db.workspaceSecret.findMany({
    where: { workspaceId },
    orderBy: { name: "asc" },
    select: { name: true, createdAt: true, updatedAt: true, updatedBy: { select: { name: true, email: true } } },
  });
  return rows;
}

export async function setSecret(db: DbOrTx, workspaceId: string, userId: string, input: z.infer<typeof SecretInput>) {
  const cipher = seal(input.value, PURPOSE, { bound: bound(workspaceId, input.name) });
  await db.workspaceSecret.upsert({
    where: { workspaceId_name: { workspaceId, name: input.name } },
    create: { workspaceId, name: input.name, cipher, updatedById: userId },
    update: { cipher, updatedById: userId },
  });
  return { name: input.name };
}

export async function deleteSecret(db: DbOrTx, workspaceId: string, name: string) {
  const res = await db.workspaceSecret.deleteMany({ where: { workspaceId, name } });
  if (res.count === 0) throw new AppError("NOT_FOUND", `secret ${name} not found`);
  return { ok: true as const };
}

/**
 * The values of `names` in the workspace, for a run that refers to them; `missing` lists those it does not
 * have (or that this server cannot open: set under another AUTH_SECRET).
 */
export async function secretValues(db: DbOrTx, workspaceId: string, names: readonly string[]): Promise<{ values: Record<string, string>; missing: string[] }> {
  if (names.length === 0) return { values: {}, missing: [] };
  const rows = await db.workspaceSecret.findMany({ where: { workspaceId, name: { in: [...names] } }, select: { name: true, cipher: true } });
  const values: Record<string, string> = {};
  for (const r of rows) {
    const value = unseal(r.cipher, PURPOSE, { bound: bound(workspaceId, r.name) });
    if (value !== null) values[r.name] = value;
  }
  return { values, missing: names.filter((n) => !Object.hasOwn(values, n)) };
}

/** Every secret value of the workspace, to mask what is relayed to the page without passing through a run's log. */
export async function allSecretValues(db: DbOrTx, workspaceId: string): Promise<Record<string, string>> {
  const rows = await db.workspaceSecret.findMany({ where: { workspaceId }, select: { name: true } });
  return (await secretValues(db, workspaceId, rows.map((r) => r.name))).values;
}
