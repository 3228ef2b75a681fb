import { test, expect, type APIRequestContext, type BrowserContext } from "@playwright/test";
import { io as connect } from "socket.io-client";
import { newUser, signUp } from "./auth";

// Two users in two workspaces. User 1's run is invisible to user 2 — not in lists, not at its URL, not in
// its socket room — until user 1 invites user 2 as a viewer; then user 2 watches it live and can neither
// start, stop nor edit. A train run (not a dry run) so that it is still running while user 2 joins.

const port = Number(process.env.E2E_PORT ?? 3100);
const base = `http://127.0.0.1:${port}`;

/** A tRPC mutation as the browser context's user (its cookies), returning the HTTP status. */
async function mutate(request: APIRequestContext, path: string, input: unknown): Promise<number> {
  const res = await request.post(`/api/trpc/${path}`, { data: { json: input }, headers: { "content-type": "application/json" } });
  return res.status();
}

async function query(request: APIRequestContext, path: string, input?: unknown): Promise<{ status: number; text: string }> {
  const q = input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify({ json: input }))}`;
  const res = await request.get(`/api/trpc/${path}${q}`);
  return { status: res.status(), text: await res.text() };
}

/** Subscribes to a run's socket room with the context's cookies; resolves with the server's ack. */
async function subscribeAs(context: BrowserContext, runId: string): Promise<{ ok: boolean; error?: string }> {
  const cookie = (await context.cookies(base)).map((c) => `${c.name}=${c.value}`).join("; ");
  const socket = connect(base, { transports: ["websocket"], extraHeaders: { cookie }, reconnection: false });
  try {
    return await new Promise((resolve, reject) => {
      socket.on("connect_error", reject);
      socket.emit("run:subscribe", { runId, afterSeq: 0 }, resolve);
    });
  } finally {
    socket.close();
  }
}

test("a run stays in its workspace until its owner invites a viewer, who then watches it live and cannot change it", async ({ browser }) => {
  test.setTimeout(420_000);
  const ctx1 = await browser.newContext({ baseURL: base });
  const ctx2 = await browser.newContext({ baseURL: base });
  const p1 = await ctx1.newPage();
  const p2 = await ctx2.newPage();
  await signUp(p1, newUser("alice"));
  await signUp(p2, newUser("bob"));

  // A wrong password says so, without saying whether the account exists.
  const stranger = await (await browser.newContext({ baseURL: base })).newPage();
  await stranger.goto("/sign-in");
  await stranger.getByLabel("Email").fill("nobody@e2e.test");
  await stranger.getByLabel("Password").fill("wrong password");
  await stranger.getByRole("button", { name: "Sign in" }).click();
  await expect(stranger.getByTestId("auth-error")).toHaveText(/invalid email or password/i);
  await stranger.close();

  // User 1 trains the default experiment of their workspace.
  await p1.goto("/");
  await expect(p1).toHaveURL(/\/experiments\/[^/]+$/);
  await p1.getByRole("button", { name: "Train" }).click();
  await expect(p1).toHaveURL(/\/runs\/[^/]+$/);
  const runUrl = new URL(p1.url()).pathname;
  const runId = runUrl.split("/").pop()!;
  await expect.poll(async () => p1.getByTestId("rollout").count(), { timeout: 180_000 }).toBeGreaterThanOrEqual(1);

  // User 2, in their own workspace: not in the list, not at its URL, not in its socket room, cannot stop it.
  const list = await query(ctx2.request, "runs.list");
  expect(list.status).toBe(200);
  expect(list.text).not.toContain(runId);
  await p2.goto("/runs");
  await expect(p2.locator(`a[href="${runUrl}"]`)).toHaveCount(0);
  await p2.goto(runUrl);
  await expect(p2.getByText(/not found/i).first()).toBeVisible();
  await expect(p2.getByTestId("rollout")).toHaveCount(0);
  expect(await subscribeAs(ctx2, runId)).toEqual({ ok: false, error: `run ${runId} not found` });
  expect(await mutate(ctx2.request, "runs.stop", { id: runId })).toBe(404);

  // User 1 invites user 2 as a viewer.
  await p1.goto("/settings/workspace");
  await p1.getByLabel("Invite role").selectOption("viewer");
  await p1.getByRole("button", { name: "Create invite link" }).click();
  const link = (await p1.getByTestId("invite-link").textContent())!.trim();
  expect(link).toContain("/invite/");

  await p2.goto(new URL(link).pathname);
  await expect(p2.getByText(/invited you as viewer/)).toBeVisible();
  await p2.getByRole("button", { name: "Join workspace" }).click();
  await expect(p2).toHaveURL(/\/runs$/);
  await expect(p2.locator(`a[href="${runUrl}"]`).first()).toBeVisible();

  // Now user 2 watches it live: rollouts keep arriving without a reload.
  await p2.goto(runUrl);
  await expect(p2.getByTestId("run-status")).toHaveText(/running/i);
  const seen = await p2.getByTestId("rollout-list").getAttribute("data-count");
  await expect
    .poll(async () => Number(await p2.getByTestId("rollout-list").getAttribute("data-count")), { timeout: 180_000 })
    .toBeGreaterThan(Number(seen));
  expect((await subscribeAs(ctx2, runId)).ok).toBe(true);

  // …and can neither stop it, nor start a run, nor edit the experiment — in the UI or through the API.
  await expect(p2.getByRole("button", { name: "Stop" })).toHaveCount(0);
  expect(await mutate(ctx2.request, "runs.stop", { id: runId })).toBe(403);
  const run = JSON.parse((await query(ctx2.request, "runs.get", { id: runId })).text) as {
    result: { data: { json: { experiment: { id: string }; version: { files: Record<string, string> } } } };
  };
  const { experiment, version } = run.result.data.json;
  expect(await mutate(ctx2.request, "runs.start", { experimentId: experiment.id, files: version.files, kind: "dry-run" })).toBe(403);
  expect(await mutate(ctx2.request, "experiments.save", { id: experiment.id, files: version.files })).toBe(403);
  await p2.goto(`/experiments/${experiment.id}`);
  await expect(p2.getByTestId("read-only")).toBeVisible();
  await expect(p2.getByRole("button", { name: "Train" })).toHaveCount(0);

  // User 1 stops the run; user 2 sees the final state too.
  await p1.goto(runUrl);
  await p1.getByRole("button", { name: "Stop" }).click();
  await expect(p1.getByTestId("run-status")).toHaveText(/stopped/i, { timeout: 60_000 });
  await p2.goto(runUrl);
  await expect(p2.getByTestId("run-status")).toHaveText(/stopped/i);
  await ctx1.close();
  await ctx2.close();
});
