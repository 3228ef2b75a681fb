/** A workspace's webhook endpoint (admins and up): set (a new secret, shown once), read, remove, delivery log. */
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { egressUrlProblem } from "@/gpu-runner/src/net/egress-check";
import { AppError } from "@/server/errors";
import { env } from "@/server/env";
import type { DbOrTx } from "@/server/db-types";

export const WebhookUrl = z
  .string()
  .trim()
  .max(2000, "url: at most 2000 characters")
  .refine((s) => {
    try {
      const u = new URL(s);
      return (u.protocol === "http:" || u.protocol === "https:") && u.hostname.length > 0;
    } catch {
      return false;
    }
  }, "url: must be an http:// or https:// URL");

/** A Standard Webhooks secret: "whsec_" + base64 of 24 random bytes (what the standardwebhooks library takes). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

export async function setWebhook(db: DbOrTx, workspaceId: string, rawUrl: string) {
  const parsed = WebhookUrl.safeParse(rawUrl);
  if (!parsed.success) throw new AppError("BAD_INPUT", parsed.error.issues[0]?.message ?? "url: must be an http:// or https:// URL");
  // Refused where it is entered, with the rule; every delivery's connection is checked again (delivery.ts).
  const refused = await egressUrlProblem(parsed.data, { field: "url", actor: "the web server", allow: env().EGRESS_ALLOW });
  if (refused) throw new AppError("BAD_INPUT", refused);
  const secret = newWebhookSecret();
  const row = await db.webhookEndpoint.upsert({
    where: { workspaceId },
    create: { workspaceId, url: parsed.data, secret },
    update: { url: parsed.data, secret },
    select: { url: true, updatedAt: true },
  });
  return { ...row, secret };
}

export async function getWebhook(db: DbOrTx, workspaceId: string) {
  const row = await db.webhookEndpoint.findUnique({ where: { workspaceId }, select: { url: true, secret: true, updatedAt: true } });
  if (!row) return null;
  // The secret is shown once, when set: afterwards only enough of it to tell two apart.
  return { url: row.url, updatedAt: row.updatedAt, secretHint: `whsec_…${row.secret.slice(-4)}` };
}

export async function removeWebhook(db: DbOrTx, workspaceId: string) {
  await db.webhookEndpoint.deleteMany({ where: { workspaceId } });
  // Nothing is sent to a removed endpoint: pending deliveries stop here (their log stays).
  await db.webhookDelivery.updateMany({ where: { workspaceId, status: "pending" }, data: { status: "failed", lastError: "webhook removed" } });
  return { ok: true as const };
}

export async function listDeliveries(db: DbOrTx, workspaceId: string, limit = 50) {
  return db.webhookDelivery.findMany({
    where: { workspaceId },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit,
    select: {
      id: true,
      url: true,
      status: true,
      attempts: true,
      lastStatusCode: true,
      lastError: true,
      nextAttemptAt: true,
      deliveredAt: true,
      createdAt: true,
      updatedAt: true,
      alert: { select: { kind: true, title: true } },
    },
  });
}
