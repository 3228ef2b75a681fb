import { test, expect } from "@playwright/test";
import { newUser, signUp } from "./auth";

// The walking skeleton end to end, with real parts: the default experiment in Monaco, Dry run through
// tRPC to the runner, rollouts of the real model arriving live over socket.io, stored in Postgres.
test("dry run of the default experiment streams rollouts live and survives a reload", async ({ page }) => {
  // Signed out, the app sends you to sign in; a new user's workspace opens on its default experiment.
  await page.goto("/runs");
  await expect(page).toHaveURL(/\/sign-in\?next=%2Fruns/);
  await signUp(page, newUser("dry"));
  await page.goto("/");
  await expect(page).toHaveURL(/\/experiments\/[^/]+$/);
  // Monaco loaded locally (no CDN) and shows the scenario.
  await expect(page.locator(".monaco-editor").first()).toBeVisible();
  await expect(page.locator(".view-lines").first()).toContainText("rollout");

  await page.getByRole("button", { name: "Dry run" }).click();
  await expect(page).toHaveURL(/\/runs\/[^/]+$/);
  const runUrl = page.url();

  // No reload: these arrive over the socket as each rollout finishes.
  const rollouts = page.getByTestId("rollout");
  await expect.poll(async () => rollouts.count(), { timeout: 180_000 }).toBeGreaterThanOrEqual(4);
  const rewards = await page.getByTestId("rollout-reward").allTextContents();
  expect(rewards.length).toBeGreaterThanOrEqual(4);
  for (const r of rewards.slice(0, 4)) expect(Number.isFinite(Number.parseFloat(r))).toBe(true);

  await expect(page.getByTestId("run-status")).toHaveText(/completed/i, { timeout: 180_000 });
  // The list is virtualised (only visible rows are in the DOM); it exposes its true length.
  const list = page.getByTestId("rollout-list");
  // The default experiment's dry run: 4 groups × 8 rollouts.
  await expect(list).toHaveAttribute("data-count", "32");

  await page.reload();
  expect(page.url()).toBe(runUrl);
  await expect(page.getByTestId("run-status")).toHaveText(/completed/i);
  await expect(list).toHaveAttribute("data-count", "32");
  await expect.poll(async () => rollouts.count()).toBeGreaterThanOrEqual(4);
});
