import path from "node:path";
import { test, expect, type Page } from "@playwright/test";
import { newUser, signUp } from "./auth";
import { e2eDatabaseUrl } from "./db";
import { seedRun } from "../server/test/seed-run";

// Issue 31: at 1440×900 the run page's charts took two thirds of the screen and left the rollout and group
// panels cramped. The charts now take at most about a quarter, and fold away (remembered) to give the panels
// the rest. Screenshots go to SCREENSHOT_DIR (default test-results/) for a person to look at.
const SHOTS = process.env.SCREENSHOT_DIR ?? "test-results";
const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SHOTS, `run-panels-1440x900-${name}.png`) });

test("at 1440×900 the rollout and group panels get most of the screen; the charts fold away", async ({ page }) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  const user = newUser("layout");
  await signUp(page, user);
  const run = await seedRun(e2eDatabaseUrl(), { email: user.email, steps: 3, groupsPerStep: 4, rolloutsPerGroup: 4, tasks: 4 });
  await page.goto(`/runs/${run.runId}`);
  const list = page.getByTestId("rollout-list");
  await expect(list).toHaveAttribute("data-count", "48");
  await page.getByTestId("rollout").first().click();
  const detail = page.getByTestId("rollout-detail");
  await expect(detail).toBeVisible();
  await expect(page.getByTestId("chart").first()).toBeVisible();
  await shot(page, "rollouts");

  const charts = (await page.getByTestId("run-charts").boundingBox())!;
  const panel = (await list.boundingBox())!;
  await page.getByRole("tab", { name: /Groups/ }).click();
  await expect(page.getByTestId("group").first()).toBeVisible();
  await shot(page, "groups");
  // The charts at most about a quarter of the window (they were two thirds); the list at least a third of it.
  expect(charts.height).toBeLessThanOrEqual(900 * 0.27);
  expect(panel.height).toBeGreaterThanOrEqual(300);

  // Folded: the panels take the charts' room, and the choice survives a reload.
  await page.getByTestId("charts-toggle").click();
  await expect(page.getByTestId("run-charts")).toBeHidden();
  await shot(page, "groups-charts-folded");
  await page.reload();
  await expect(page.getByTestId("charts-toggle")).toHaveAttribute("aria-expanded", "false");
  await page.getByTestId("charts-toggle").click();
  await expect(page.getByTestId("run-charts")).toBeVisible();
});
