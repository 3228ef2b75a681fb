import { test, expect } from "@playwright/test";
import { newUser, signUp } from "./auth";
import { e2eDatabaseUrl } from "./db";
import { seedRun } from "../server/test/seed-run";

// The rollout viewer on a finished train run stored in the stack's Postgres (seeded: 3 steps × 4 groups × 4
// rollouts of a calculator conversation with a tool call; see server/test/seed-run.ts): filters kept in the
// address, j/k + Enter, a transcript with its tool call and per-turn figures, and the group view's task
// picker, step slider, diff and "trained nothing" badge.
test("rollout viewer: filter, j/k, transcript with a tool call, group view across steps", async ({ page }) => {
  const user = newUser("viewer");
  await signUp(page, user);
  const run = await seedRun(e2eDatabaseUrl(), { email: user.email, steps: 3, groupsPerStep: 4, rolloutsPerGroup: 4, tasks: 4 });
  expect(run.rollouts).toBe(48);

  await page.goto(`/runs/${run.runId}`);
  const list = page.getByTestId("rollout-list");
  await expect(list).toHaveAttribute("data-count", "48");
  for (const h of ["Step", "Task", "Reply", "Reward", "Adv", "Tokens", "Time", "Error"]) {
    await expect(page.getByRole("columnheader", { name: h, exact: true })).toBeVisible();
  }

  // Filters: step, then a reward range; both land in the address.
  await page.getByLabel("Step", { exact: true }).selectOption("1");
  await expect(list).toHaveAttribute("data-count", "16");
  await expect(page).toHaveURL(/[?&]step=1(&|$)/);
  await page.getByLabel("min reward").fill("1");
  await expect(page).toHaveURL(/reward_min=1/);
  const rewarded = Number(await list.getAttribute("data-count"));
  expect(rewarded).toBeGreaterThan(0);
  expect(rewarded).toBeLessThan(16);
  for (const r of await page.getByTestId("rollout-reward").allTextContents()) expect(Number(r)).toBeGreaterThanOrEqual(1);
  await page.getByRole("button", { name: "clear filters" }).click();
  await expect(list).toHaveAttribute("data-count", "48");
  // Text search across messages (the final answers say "The answer is N").
  await page.getByLabel("Search rollouts").fill("no such words anywhere");
  await expect(page.getByText("No rollout matches these filters")).toBeVisible();
  await page.getByLabel("Search rollouts").fill("");
  // The search filters with a deferred value: wait until the list is whole again before moving through it.
  await expect(list).toHaveAttribute("data-count", "48");

  // j / k move the cursor (newest first), Enter opens the transcript.
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  const rows = page.getByTestId("rollout");
  await page.keyboard.press("j");
  await expect(rows.nth(0)).toHaveAttribute("aria-selected", "true");
  await page.keyboard.press("j");
  await page.keyboard.press("j");
  await expect(rows.nth(2)).toHaveAttribute("aria-selected", "true");
  await page.keyboard.press("k");
  await expect(rows.nth(1)).toHaveAttribute("aria-selected", "true");
  const cursorId = await rows.nth(1).getAttribute("data-rollout-id");
  await page.keyboard.press("Enter");
  const detail = page.getByTestId("rollout-detail");
  await expect(detail).toContainText(cursorId!);
  await expect(detail.getByTestId("tool-call-name")).toHaveText("add");
  await expect(detail.getByTestId("tool-result")).toContainText('"result"');
  await expect(detail.getByTestId("turn-figures")).toHaveCount(2);
  await expect(detail.getByTestId("rollout-output")).toContainText("The answer is");
  // With the transcript open, j moves it along.
  await page.keyboard.press("j");
  await expect(detail).toContainText((await rows.nth(2).getAttribute("data-rollout-id"))!);
  await page.keyboard.press("Escape");
  await expect(detail).toHaveCount(0);

  // A pathology flag's link: exactly the named rollouts.
  const a = `${run.runId}:s0:g1:r0`;
  const b = `${run.runId}:s2:g3:r2`;
  await page.goto(`/runs/${run.runId}?tab=rollouts&rollouts=${a},${b}`);
  await expect(list).toHaveAttribute("data-count", "2");
  await expect(page.getByTestId("filter-ids")).toContainText("2 linked rollouts");

  // Group view: task 0 across steps. Its group at step 0 rewarded every rollout alike: trained nothing.
  await page.goto(`/runs/${run.runId}`);
  await page.getByRole("tab", { name: /Groups/ }).click();
  await page.getByTestId("group-task").selectOption("train:0");
  const slider = page.getByTestId("group-step-slider");
  await expect(page.getByTestId("group-step")).toHaveText("2");
  await expect(page.getByTestId("group")).toHaveAttribute("data-step", "2");
  await expect(page.getByTestId("group-rollout")).toHaveCount(4);
  await expect(page.getByTestId("group-diff")).toBeVisible();
  await expect(page.getByTestId("trained-nothing")).toHaveCount(0);
  await slider.fill("0");
  await expect(page.getByTestId("group-step")).toHaveText("0");
  await expect(page.getByTestId("group")).toHaveAttribute("data-step", "0");
  await expect(page.getByTestId("trained-nothing")).toBeVisible();
  for (const adv of await page.getByTestId("group-adv").allTextContents()) expect(adv).toBe("A ±0.000");
  await slider.press("ArrowRight");
  await expect(page.getByTestId("group-step")).toHaveText("1");
  // Picking B changes what is diffed; the diff names both sides.
  await page.getByTestId("diff-pick-B").nth(1).click();
  await expect(page.getByTestId("diff-pick-B").nth(1)).toHaveAttribute("aria-pressed", "true");
  await expect(page.getByTestId("group-diff")).toContainText("→ B #2");
});
