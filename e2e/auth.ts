/**
 * Signing up in the browser tests. Each test signs up a fresh user: on the fresh e2e database the first one
 * becomes the owner of the default workspace ("Create the owner account"), the others get workspaces of
 * their own — so tests never share state through one account.
 */
import { expect, type Page } from "@playwright/test";

export interface TestUser {
  name: string;
  email: string;
  password: string;
}

export function newUser(label: string): TestUser {
  const tag = `${Date.now()}-${Math.random().toString(36).slice(2, 7)}`;
  return { name: `${label} ${tag}`, email: `${label}-${tag}@e2e.test`, password: `pw-${tag}-long` };
}

/** Signs up from the sign-in page (either form) and waits until the app has opened. */
export async function signUp(page: Page, user: TestUser, next = "/"): Promise<void> {
  await page.goto(`/sign-in?mode=sign-up&next=${encodeURIComponent(next)}`);
  const form = page.locator("form[aria-label='Create account']");
  await expect(form).toBeVisible();
  await form.locator("input[name=name]").fill(user.name);
  await form.locator("input[name=email]").fill(user.email);
  await form.locator("input[name=password]").fill(user.password);
  await form.locator("button[type=submit]").click();
  await expect(page).not.toHaveURL(/\/sign-in/);
}
