import { expect, test, type Page } from "@playwright/test";
import { newUser, signUp } from "./auth";

// config.json explains itself: hovering a key in Monaco shows the field's `.describe()` text from
// contracts/config.ts (z.toJSONSchema → the JSON worker), in Chromium against the real web server.

/** The Monaco token of a JSON key, e.g. `"learning_rate"` (the key's own span, not its whole line). */
function keyToken(page: Page, key: string) {
  return page.locator(".monaco-editor .view-line span span").filter({ hasText: new RegExp(`^"${key}"$`) }).first();
}

/**
 * Hovers a key until its hover shows `text`. The JSON worker loads the schema after the model opens, so a
 * first hover may come back empty: the mouse leaves and comes back until it does not.
 */
async function expectHover(page: Page, key: string, text: string) {
  const hover = page.locator(".monaco-hover").filter({ hasText: text });
  await expect(async () => {
    await page.mouse.move(0, 0);
    await keyToken(page, key).hover();
    await expect(hover).toBeVisible({ timeout: 5_000 });
  }).toPass({ timeout: 60_000 });
  return hover;
}

test("hovering a config.json key shows what the field does, its default and its reference", async ({ page }) => {
  await signUp(page, newUser("hover"));
  await page.goto("/");
  await expect(page).toHaveURL(/\/experiments\/[^/]+$/);
  // The default experiment (templates/say-the-word) sets sampling.temperature and sampling.max_tokens (it
  // keeps the trainer's defaults, so no trainer field is there to hover).
  await page.locator('[data-testid=file][data-path="config.json"]').click();
  await expect(page.locator('[data-testid=file][data-path="config.json"]')).toHaveAttribute("aria-current", "true");
  await expect(page.locator(".monaco-editor .view-lines").first()).toContainText('"max_tokens"');

  const maxTokens = await expectHover(page, "max_tokens", "Most tokens one model call may generate");
  await expect(maxTokens).toContainText("Default 48");
  await page.screenshot({ path: test.info().outputPath("config-hover-max-tokens.png") });

  // A field names the reference its default follows.
  const temperature = await expectHover(page, "temperature", "Sampling temperature of training rollouts");
  await expect(temperature).toContainText("TRL's GRPOConfig default");
});
