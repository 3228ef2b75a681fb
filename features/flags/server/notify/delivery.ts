/**
 * Sends queued webhook deliveries: signed per Standard Webhooks (the `standardwebhooks` library, the spec
 * Svix uses: HMAC-SHA256 over "<id>.<timestamp>.<raw body>" in the webhook-signature header), retried with
 * exponential backoff. The queue is the WebhookDelivery table, so a web restart loses nothing; rows are
 * claimed with FOR UPDATE SKIP LOCKED and a lease, so several web servers never send one twice at once.
 */
import { Webhook } from "standardwebhooks";
import { EgressRefusedError } from "@/gpu-runner/src/net/egress-policy";
import { createGuardedFetch } from "@/gpu-runner/src/net/guarded-fetch";
import { env } from "@/server/env";
import type { Db } from "@/server/db-types";

export interface DeliveryOptions {
  /** The clock (tests move it instead of waiting). */
  now?: Date;
  /** Attempts before a delivery is given up (failed). */
  maxAttempts?: number;
  /** Delay before retry n (1 = after the first failure). */
  backoffMs?: (attempt: number) => number;
  timeoutMs?: number;
  batch?: number;
}

export const DEFAULT_MAX_ATTEMPTS = 8;
/** 10 s, 20 s, 40 s … capped at 1 h: about 2 h of retries over 8 attempts. */
export const defaultBackoffMs = (attempt: number) => Math.min(10_000 * 2 ** (attempt - 1), 3_600_000);
/** A claimed row is not claimed again for this long (a server that dies mid-send releases it by expiry). */
const LEASE_MS = 60_000;

interface Claimed {
  id: string;
  workspaceId: string;
  url: string;
  body: string;
  attempts: number;
}

/** Delivers every pending delivery that is due; returns how many attempts were made. */
export async function deliverDue(db: Db, opts: DeliveryOptions = {}): Promise<number> {
  const now = opts.now ?? new Date();
  const maxAttempts = opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const backoff = opts.backoffMs ?? defaultBackoffMs;
  const claimed = await db.$queryRaw<Claimed[]>`
    UPDATE "WebhookDelivery" SET "nextAttemptAt" = ${new Date(now.getTime() + LEASE_MS)}, "updatedAt" = ${now}
    WHERE "id" IN (
      SELECT "id" FROM "WebhookDelivery" WHERE "status" = 'pending' AND "nextAttemptAt" <= ${now}
      ORDER BY "nextAttemptAt" LIMIT ${opts.batch ?? 20} FOR UPDATE SKIP LOCKED)
    RETURNING "id", "workspaceId", "url", "body", "attempts"`;
  for (const d of claimed) {
    const hook = await db.webhookEndpoint.findUnique({ where: { workspaceId: d.workspaceId }, select: { secret: true } });
    const attempts = d.attempts + 1;
    if (!hook) {
      await db.webhookDelivery.update({ where: { id: d.id }, data: { status: "failed", lastError: "webhook removed" } });
      continue;
    }
    const result = await send(d, hook.secret, now, opts.timeoutMs ?? 10_000);
    const ok = result.status !== null && result.status >= 200 && result.status < 300;
    await db.webhookDelivery.update({
      where: { id: d.id },
      data: {
        attempts,
        lastStatusCode: result.status,
        lastError: ok ? null : result.error,
        ...(ok
          ? { status: "delivered", deliveredAt: new Date() }
          : attempts >= maxAttempts
            ? { status: "failed" }
            : { nextAttemptAt: new Date(now.getTime() + backoff(attempts)) }),
      },
    });
  }
  return claimed.length;
}

async function send(d: Claimed, secret: string, now: Date, timeoutMs: number): Promise<{ status: number | null; error: string | null }> {
  try {
    const signature = new Webhook(secret).sign(d.id, now, d.body);
    // Checked at connect time, on the address actually connected to: a URL saved while allowed, or a name
    // that now resolves to an internal address, is refused here (the reason lands in the delivery log).
    const fetch = createGuardedFetch({ field: "webhook url", actor: "the web server", allow: env().EGRESS_ALLOW });
    const res = await fetch(d.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": "Rollbook-Webhooks/1",
        "webhook-id": d.id,
        "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
        "webhook-signature": signature,
      },
      body: d.body,
      redirect: "manual", // a redirect is not a delivery
      signal: AbortSignal.timeout(timeoutMs),
    });
    await res.body?.cancel().catch(() => undefined);
    return { status: res.status, error: res.ok ? null : `HTTP ${res.status}` };
  } catch (e) {
    if (e instanceof EgressRefusedError) return { status: null, error: e.message };
    const cause = e instanceof Error && e.cause instanceof Error ? `: ${e.cause.message}` : "";
    return { status: null, error: `${e instanceof Error ? e.message : String(e)}${cause}`.slice(0, 500) };
  }
}
