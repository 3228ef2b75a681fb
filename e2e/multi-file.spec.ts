import { newUser, signUp } from "./auth";
import { test, expect, type Page } from "@playwright/test";

// An experiment from a template, grown by a helper file under lib/: a type error in the helper is marked
// in that file at its line (by the runner's Check and by Monaco), the fix clears it, and a dry run of the
// multi-file experiment produces rollouts — all in Chromium against the real web server, runner and engine.

/** Replaces the open Monaco model's text as a paste would (typing would trigger auto-indent and auto-close). */
async function replaceEditorText(page: Page, text: string) {
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("ControlOrMeta+A");
  await page.evaluate((t) => {
    const data = new DataTransfer();
    data.setData("text/plain", t);
    document.activeElement?.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
  }, text);
}

async function openFile(page: Page, path: string) {
  await page.locator(`[data-testid=file][data-path="${path}"]`).click();
  await expect(page.locator(`[data-testid=file][data-path="${path}"]`)).toHaveAttribute("aria-current", "true");
}

const BROKEN_HELPER = `export function shout(word: string): string {
  const n: number = word;
  return word.toUpperCase() + n;
}
`;
const FIXED_HELPER = `export function shout(word: string): string {
  return word.toUpperCase();
}
`;
const SCENARIO = `import type { RolloutContext } from "rollbook";
import { shout } from "./lib/check";

export interface Task {
  word: string;
}

export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  const reply = await ctx.chat([
    { role: "system", content: "Answer with one word." },
    { role: "user", content: \`Say the word \${ctx.task.word}.\` },
  ]);
  ctx.log(shout(ctx.task.word));
  return reply.content;
}
`;

test("a lib/ helper's type error is marked at its line, and the fixed experiment dry-runs", async ({ page }) => {
  const name = `e2e-multi-${Date.now()}`;
  await signUp(page, newUser("multi"));
  await page.goto("/experiments/new?template=say-the-word");
  await expect(page.locator("[data-template=say-the-word] input")).toBeChecked();
  await page.locator("input[name=name]").fill(name);
  await page.getByRole("button", { name: "Create and open" }).click();
  await expect(page).toHaveURL(/\/experiments\/(?!new)[^/]+$/);
  await expect(page.getByRole("heading", { name })).toBeVisible();
  await expect(page.locator(".view-lines").first()).toContainText("rollout");

  // A helper file, named by the rule, imported by scenario.ts.
  await page.getByRole("button", { name: "+ New file" }).click();
  await page.getByLabel("New file name").fill("bad name");
  await page.getByLabel("New file name").press("Enter");
  await expect(page.getByTestId("file-name-error")).toContainText('only letters, digits, "_" and "-"');
  await page.getByLabel("New file name").fill("check");
  await page.getByLabel("New file name").press("Enter");
  await openFile(page, "lib/check.ts");
  await replaceEditorText(page, BROKEN_HELPER);
  await openFile(page, "scenario.ts");
  await replaceEditorText(page, SCENARIO);
  await expect(page.locator('[data-path="lib/check.ts"] [data-testid=file-unsaved]')).toBeVisible();

  // The runner's check reports the error in lib/check.ts at line 2 and the editor opens it there.
  await page.getByRole("button", { name: "Check", exact: true }).click();
  const diagnostic = page.getByTestId("diagnostic").filter({ hasText: "lib/check.ts:2:" });
  await expect(diagnostic).toContainText("Type 'string' is not assignable to type 'number'");
  await expect(page.locator(`[data-testid=file][data-path="lib/check.ts"]`)).toHaveAttribute("aria-current", "true");
  await expect(page.locator('[data-path="lib/check.ts"] [data-testid=file-errors]')).toHaveText("1");
  // The squiggle sits on line 2 of the helper.
  const squiggle = page.locator(".monaco-editor .squiggly-error").first();
  await expect(squiggle).toBeVisible();
  const lineTwo = page.locator(".monaco-editor .line-numbers").filter({ hasText: /^2$/ }).first();
  // Polled: Monaco re-renders its decorations and line numbers, and a box read between two renders is null.
  await expect
    .poll(async () => {
      const [sq, ln] = [await squiggle.boundingBox(), await lineTwo.boundingBox()];
      return Boolean(sq && ln && Math.abs(sq.y + sq.height / 2 - (ln.y + ln.height / 2)) < ln.height);
    })
    .toBe(true);
  // scenario.ts itself is clean: the import of the helper resolves in the editor.
  await expect(page.locator('[data-path="scenario.ts"] [data-testid=file-errors]')).toHaveCount(0);

  // Fixed: the marker and the count go; a dry run of the three-file experiment produces rollouts.
  await replaceEditorText(page, FIXED_HELPER);
  await expect(page.locator('[data-path="lib/check.ts"] [data-testid=file-errors]')).toHaveCount(0);
  await expect(page.getByTestId("diagnostic")).toHaveCount(0);
  await page.getByRole("button", { name: "Dry run" }).click();
  await expect(page).toHaveURL(/\/runs\/[^/]+$/);
  await expect.poll(async () => page.getByTestId("rollout").count(), { timeout: 180_000 }).toBeGreaterThanOrEqual(4);
  await expect(page.getByTestId("run-status")).toHaveText(/completed/i, { timeout: 180_000 });
  // The helper ran: rewards came back, and no rollout failed in user code (a busy machine may time some out).
  await expect.poll(async () => page.getByTestId("rollout-reward").count()).toBeGreaterThanOrEqual(1);
  await expect(page.getByTestId("rollout-error").filter({ hasText: /^thrown/ })).toHaveCount(0);

  // The run froze all three files.
  await page.getByRole("tab", { name: "Config & code" }).click();
  await page.getByRole("tab", { name: "lib/check.ts" }).click();
  await expect(page.getByTestId("run-code")).toContainText("return word.toUpperCase();");
});
