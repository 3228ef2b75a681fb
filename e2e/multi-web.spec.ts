import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { test, expect } from "@playwright/test";
import { newUser, signUp } from "./auth";
import { e2eDatabaseUrl } from "./db";

// Two web servers on one database (scripts/e2e-stack.sh starts web 2 on E2E_PORT2): a train run started
// through web 1 is ingested by web 1 (it holds the run's ingest lease); Chromium on web 2's run page sees its
// rollouts arrive live (through the socket.io Postgres adapter), and keeps seeing new ones after web 1 is
// SIGKILLed and web 2 has taken the lease over. Real runner, engine and model.

const stackDir = process.env.E2E_STACK_DIR!;
const web2 = `http://127.0.0.1:${process.env.E2E_PORT2}`;
const pidOf = (name: string) => Number(fs.readFileSync(path.join(stackDir, `${name}.pid`), "utf8").trim());

async function leaseHolder(runId: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: e2eDatabaseUrl() });
  await client.connect();
  try {
    const res = await client.query<{ holder: string }>(`SELECT "holder" FROM "IngestLease" WHERE "runId" = $1`, [runId]);
    return res.rows[0]?.holder ?? null;
  } finally {
    await client.end();
  }
}

/** The holder id is "<host>:<pid>:<random>" (features/run-lifecycle/server/ingest/lease.ts). */
const pidOfHolder = (holder: string | null) => (holder ? Number(holder.split(":").at(-2)) : null);

test("a browser on web server 2 sees live rollouts of a run web server 1 ingests, and still after web 1 is killed", async ({ page, request }) => {
  test.setTimeout(900_000);
  const hold = path.join(stackDir, "web1.hold");
  await expect.poll(() => request.get(`${web2}/api/health`).then((r) => r.status(), () => 0), { timeout: 240_000 }).toBe(200);

  // Signed up and started on web 1: its API starts the run, so its ingestion follows it.
  await signUp(page, newUser("multiweb"));
  await page.goto("/");
  await expect(page).toHaveURL(/\/experiments\/[^/]+$/);
  await page.getByRole("button", { name: "Train" }).click();
  await expect(page).toHaveURL(/\/runs\/[^/]+$/);
  const runId = new URL(page.url()).pathname.split("/").at(-1)!;
  const web1Pid = pidOf("web1");
  await expect.poll(async () => pidOfHolder(await leaseHolder(runId)), { timeout: 60_000 }).toBe(web1Pid);

  // The same run on web 2 (the session cookie is the host's, and both servers share the secret and database).
  await page.goto(`${web2}/runs/${runId}`);
  const list = page.getByTestId("rollout-list");
  const shown = async () => Number((await list.getAttribute("data-count")) ?? 0);
  const first = await shown();
  await expect.poll(shown, { timeout: 300_000 }).toBeGreaterThanOrEqual(first + 4);
  // Live on web 2 while web 1 ingests: web 2 holds no lease on it.
  expect(pidOfHolder(await leaseHolder(runId))).toBe(web1Pid);

  try {
    fs.writeFileSync(hold, "kept down by e2e/multi-web.spec.ts\n"); // the stack does not restart it meanwhile
    process.kill(web1Pid, "SIGKILL");
    const atKill = await shown();
    const web2Pid = pidOf("web2");
    await expect.poll(async () => pidOfHolder(await leaseHolder(runId)), { timeout: 120_000 }).toBe(web2Pid);
    // Still live on web 2, ingested by web 2 now.
    await expect.poll(shown, { timeout: 300_000 }).toBeGreaterThanOrEqual(atKill + 4);
    await expect(page.getByTestId("run-status")).toHaveText(/running/i);

    // Stop it (through web 2), then the page holds exactly what the database stored: no gap, no duplicate.
    await page.getByRole("button", { name: "Stop" }).click();
    await expect(page.getByTestId("run-status")).toHaveText(/stopped/i, { timeout: 120_000 });
    const stored = async () => {
      const client = new pg.Client({ connectionString: e2eDatabaseUrl() });
      await client.connect();
      const res = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM "Trajectory" WHERE "runId" = $1`, [runId]).finally(() => client.end());
      return res.rows[0]!.n;
    };
    await expect.poll(async () => (await shown()) - (await stored()), { timeout: 60_000 }).toBe(0);
  } finally {
    // Web 1 back for the specs after this one.
    fs.rmSync(hold, { force: true });
    await expect
      .poll(() => request.get("/api/health").then((r) => r.status(), () => 0), { timeout: 300_000, intervals: [1_000] })
      .toBe(200);
  }
});
