/**
 * Webhook deliveries against a real local HTTP receiver: it refuses the first 2 attempts (HTTP 500), then
 * verifies the Standard Webhooks signature with the workspace's secret; the log shows exactly one
 * delivered row with attempts = 3. Also: settings refuse a non-http(s) URL naming the field, and the secret
 * is shown once.
 *   npx vitest run --project server features/flags/server/notify/webhooks.servertest.ts
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { resetEnv } from "@/server/env";
import { callerFor, createRunningRun, createTestDb, newWorkspace, type TestDb } from "@/server/test/harness";
import { raiseAlert } from "./alerts";
import { deliverDue } from "./delivery";

let tdb: TestDb;
const db = () => tdb.handle.prisma;
let server: http.Server;
let url: string;
const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
let refuseFirst = 2;

beforeAll(async () => {
  // The receivers here listen on 127.0.0.1, which the egress policy refuses unless the operator allows it.
  process.env.EGRESS_ALLOW = "127.0.0.1";
  resetEnv();
  tdb = await createTestDb();
  server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      received.push({ headers: req.headers, body });
      if (refuseFirst > 0) {
        refuseFirst--;
        res.writeHead(500).end("not yet");
      } else res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/rollbook`;
}, 120_000);
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await tdb?.drop();
});

describe("workspace webhook", () => {
  it("refuses a URL that is not http(s), naming the field", async () => {
    const owner = callerFor(db(), await newWorkspace(db()));
    for (const bad of ["ftp://example.com/x", "javascript:alert(1)", "not a url", ""]) {
      await expect(owner.flags.setWebhook({ url: bad }), bad).rejects.toThrow(/^url: must be an http:\/\/ or https:\/\/ URL/);
    }
    expect(await owner.flags.webhook()).toBeNull();
  });

  it("delivers a signed alert, retrying with backoff: 2 failures, then exactly one delivery with attempts = 3", async () => {
    const ws = await newWorkspace(db());
    const owner = callerFor(db(), ws);
    const { secret } = await owner.flags.setWebhook({ url });
    expect(secret).toMatch(/^whsec_/);
    // Shown once: afterwards only a hint.
    const shown = await owner.flags.webhook();
    expect(shown?.url).toBe(url);
    expect(JSON.stringify(shown)).not.toContain(secret.slice(6));

    const runId = await createRunningRun(db(), ws);
    const alert = await raiseAlert(db(), {
      workspaceId: ws, runId, kind: "run.flag", key: `${runId}:flag:reward_collapse:7`, severity: "critical",
      title: "Run #1: reward collapse", message: "No group has reward variance on steps 7–8", data: { runNumber: 1, rule: "reward_collapse" },
    });
    expect(alert).not.toBeNull();
    // The same alert again is a no-op: no second delivery.
    expect(await raiseAlert(db(), { workspaceId: ws, runId, kind: "run.flag", key: `${runId}:flag:reward_collapse:7`, severity: "critical", title: "x", message: "x", data: {} })).toBeNull();

    const backoff = (n: number) => 1_000 * 2 ** (n - 1);
    let now = Date.now();
    expect(await deliverDue(db(), { now: new Date(now), backoffMs: backoff })).toBe(1); // → 500
    // Not due again until its backoff has passed.
    expect(await deliverDue(db(), { now: new Date(now + 500), backoffMs: backoff })).toBe(0);
    let row = await db().webhookDelivery.findFirstOrThrow({ where: { workspaceId: ws } });
    expect(row).toMatchObject({ status: "pending", attempts: 1, lastStatusCode: 500 });
    expect(row.nextAttemptAt.getTime()).toBe(now + 1_000);
    now += 1_000;
    expect(await deliverDue(db(), { now: new Date(now), backoffMs: backoff })).toBe(1); // → 500
    row = await db().webhookDelivery.findFirstOrThrow({ where: { workspaceId: ws } });
    expect(row.nextAttemptAt.getTime()).toBe(now + 2_000); // doubled
    now += 2_000;
    expect(await deliverDue(db(), { now: new Date(now), backoffMs: backoff })).toBe(1); // → 204
    expect(await deliverDue(db(), { now: new Date(now + 3_600_000), backoffMs: backoff })).toBe(0); // nothing left

    expect(received).toHaveLength(3);
    const last = received[2]!;
    const verified = new Webhook(secret).verify(last.body, last.headers as Record<string, string>, { jsonParse: true }) as never;
    expect(verified).toMatchObject({ type: "run.flag", data: { alertId: alert!.id, runId, rule: "reward_collapse", severity: "critical" } });
    // Every attempt carried the same message id (receivers dedupe by it), and a wrong secret does not verify.
    expect(new Set(received.map((r) => r.headers["webhook-id"])).size).toBe(1);
    expect(() => new Webhook(`whsec_${Buffer.from("another secret, 24 bytes!").toString("base64")}`).verify(last.body, last.headers as Record<string, string>)).toThrow();

    const log = await owner.flags.deliveries();
    expect(log.map((d) => [d.status, d.attempts, d.lastStatusCode, d.alert.kind])).toEqual([["delivered", 3, 204, "run.flag"]]);
    expect(log[0]!.deliveredAt).toBeInstanceOf(Date);
  });

  it("gives up after maxAttempts, and an unreachable receiver is logged with its error", async () => {
    const ws = await newWorkspace(db());
    const owner = callerFor(db(), ws);
    await owner.flags.setWebhook({ url: "http://127.0.0.1:9/nothing-listens" });
    await raiseAlert(db(), { workspaceId: ws, runId: null, kind: "run.failed", key: `${ws}:unreachable`, severity: "critical", title: "t", message: "m", data: {} });
    const now = Date.now();
    await deliverDue(db(), { now: new Date(now), maxAttempts: 2, backoffMs: () => 10 });
    await deliverDue(db(), { now: new Date(now + 10), maxAttempts: 2, backoffMs: () => 10 });
    const [d] = await owner.flags.deliveries();
    expect(d).toMatchObject({ status: "failed", attempts: 2, lastStatusCode: null });
    expect(d!.lastError).toMatch(/fetch failed|ECONNREFUSED/);
  });
});
