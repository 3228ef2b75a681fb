import { expect, test } from "@playwright/test";
import { newUser, signUp } from "./auth";

// The Team page's secrets and MCP servers, as an admin uses them: a secret's value is typed once and never
// comes back to the page (not after saving, not after a reload); a stdio MCP server is registered by name
// and command (the bundled `everything` is there from the start).
test("an owner keeps a secret the page never shows again, and registers an MCP server", async ({ page }) => {
  const owner = newUser("owner");
  await signUp(page, owner, "/settings/workspace");
  await page.goto("/settings/workspace");
  const secrets = page.getByTestId("secrets-settings");
  await expect(secrets).toBeVisible();
  const value = `sk-e2e-${Date.now()}-secret-value`;
  await secrets.getByLabel("Secret name").fill("OPENAI_KEY");
  await secrets.getByLabel("Secret value").fill(value);
  await secrets.getByRole("button", { name: "Add" }).click();
  await expect(secrets.getByTestId("secret-row").filter({ hasText: "OPENAI_KEY" })).toBeVisible();
  await expect(secrets).toContainText("Its value will not be shown again");
  expect(await page.content()).not.toContain(value);
  await page.reload();
  await expect(page.getByTestId("secret-row").filter({ hasText: "OPENAI_KEY" })).toBeVisible();
  expect(await page.content()).not.toContain(value);

  const servers = page.getByTestId("mcp-servers-settings");
  await expect(servers.getByTestId("mcp-server-row").filter({ hasText: "everything" })).toContainText("mcp-server-everything");
  await servers.getByRole("button", { name: "Register a server" }).click();
  await servers.getByLabel("Name").fill("search");
  await servers.getByLabel("Command").fill("mcp-server-everything");
  await servers.getByLabel("Environment").fill("API_KEY=${OPENAI_KEY}");
  await servers.getByRole("button", { name: "Save" }).click();
  const row = servers.getByTestId("mcp-server-row").filter({ hasText: "search" });
  await expect(row).toContainText("mcp-server-everything");
  await expect(row).toContainText("API_KEY");
  await page.screenshot({ path: test.info().outputPath("team-settings.png"), fullPage: true });
});
