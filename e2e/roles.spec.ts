import { test, expect, type Browser, type Page } from "@playwright/test";
import pg from "pg";
import { newUser, signUp, type TestUser } from "./auth";
import { e2eDatabaseUrl } from "./db";
import { seedRun } from "../server/test/seed-run";

// The UI offers a role only what the server lets it do (contracts/actions.ts): a viewer and a member of the
// owner's workspace visit every page — experiments, the editor, a finished train run with checkpoints,
// compare, team and runners (workspace settings), account settings — and click every enabled button, tab
// and menu item they find (menus opened again until nothing new shows). No call may come back 403, and no
// "needs the … role" refusal may appear. The runs are seeded rows (server/test/seed-run.ts), not training.

/** Controls that would end the test rather than test a permission. */
const SKIP = /sign out|log out|leave workspace/i;
/** What the loop clicks: buttons, tabs and menu items (links only navigate; selects only pick). */
const CONTROLS = "button, [role=menuitem], [role=tab]";
/** Per page: enough for every control of the busiest page, small enough to fail fast on a loop. */
const MAX_CLICKS = 60;

interface Seeded {
  experimentId: string;
  runId: string;
  otherRunId: string;
}

/** The owner's workspace: two finished train runs (the first with checkpoints at steps 1 and 2). */
async function seedWorkspace(owner: TestUser): Promise<Seeded> {
  const small = { email: owner.email, steps: 3, groupsPerStep: 2, rolloutsPerGroup: 2, tasks: 2 };
  const run = await seedRun(e2eDatabaseUrl(), small);
  const other = await seedRun(e2eDatabaseUrl(), small);
  const client = new pg.Client({ connectionString: e2eDatabaseUrl() });
  await client.connect();
  try {
    // The page only lists them: nothing here reads the files (a member's Eval checkpoint fails on the runner, not with 403).
    for (const step of [1, 2]) {
      await client.query(`INSERT INTO "Checkpoint" ("runId", "step", "path", "sizeBytes") VALUES ($1, $2, $3, 1)`, [run.runId, step, `/nowhere/${step}`]);
    }
    const exp = await client.query<{ experimentId: string }>(`SELECT "experimentId" FROM "Run" WHERE "id" = $1`, [run.runId]);
    return { experimentId: exp.rows[0]!.experimentId, runId: run.runId, otherRunId: other.runId };
  } finally {
    await client.end();
  }
}

async function invite(ownerPage: Page, role: "viewer" | "member"): Promise<string> {
  await ownerPage.goto("/settings/workspace");
  await ownerPage.getByLabel("Invite role").selectOption(role);
  await ownerPage.getByRole("button", { name: "Create invite link" }).click();
  const link = ownerPage.getByTestId("invite-link").last();
  await expect(link).toContainText("/invite/");
  return new URL((await link.textContent())!.trim()).pathname;
}

/** A page whose every refused call and refusal message is recorded. */
async function watchedPage(browser: Browser, user: TestUser, invitePath: string): Promise<{ page: Page; refusals: string[]; inFlight: () => number }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const refusals: string[] = [];
  let pending = 0;
  page.on("request", (r) => r.url().includes("/api/") && pending++);
  const done = (r: { url(): string }) => r.url().includes("/api/") && pending--;
  page.on("requestfinished", done);
  page.on("requestfailed", done);
  page.on("response", async (res) => {
    if (!res.url().includes("/api/") || res.status() < 207) return;
    // A batch with mixed results answers 207: the refusal is then inside the body.
    const body = res.status() === 403 ? "" : await res.text().catch(() => "");
    if (res.status() === 403 || body.includes('"FORBIDDEN"')) refusals.push(`${res.status()} ${res.request().method()} ${new URL(res.url()).pathname} (on ${page.url()})`);
  });
  // A confirm is answered yes (the action behind it is what is tested); a prompt gets no text (nothing is made).
  page.on("dialog", (d) => void (d.type() === "prompt" ? d.dismiss() : d.accept()));
  await signUp(page, user);
  await page.goto(invitePath);
  await page.getByRole("button", { name: "Join workspace" }).click();
  await expect(page).toHaveURL(/\/runs$/);
  return { page, refusals, inFlight: () => pending };
}

/** Until no API call has been in flight for a moment (live pages keep a socket, not a request, open). */
async function settle(page: Page, inFlight: () => number): Promise<void> {
  let quiet = 0;
  for (let i = 0; i < 40 && quiet < 3; i++) {
    await page.waitForTimeout(100);
    quiet = inFlight() === 0 ? quiet + 1 : 0;
  }
}

interface ControlInfo {
  key: string;
  usable: boolean;
  opener: boolean;
}

/** Every control on the page, described once per round (one evaluate, not one per control). */
async function controls(page: Page): Promise<ControlInfo[]> {
  return page.locator(CONTROLS).evaluateAll((els) =>
    els.map((el) => {
      const b = el.getBoundingClientRect();
      const style = getComputedStyle(el);
      const visible = b.width > 0 && b.height > 0 && style.visibility !== "hidden" && style.display !== "none";
      const disabled = (el as HTMLButtonElement).disabled || el.getAttribute("aria-disabled") === "true";
      const label = (el.getAttribute("aria-label") || el.textContent || el.getAttribute("title") || "").replace(/\s+/g, " ").trim().slice(0, 80);
      return {
        key: `${el.getAttribute("role") ?? el.tagName.toLowerCase()}:${label}`,
        usable: visible && !disabled,
        opener: el.hasAttribute("aria-haspopup") || el.hasAttribute("aria-expanded"),
      };
    }),
  );
}

/**
 * Clicks each distinct enabled control of `url` once (going back to `url` when a click navigates away), and
 * menu openers again whenever nothing new is showing, so the items of every menu are reached too.
 */
async function clickEverything(page: Page, inFlight: () => number, url: string): Promise<string[]> {
  const clicked = new Set<string>();
  let openersTried = new Set<string>();
  const home = async () => {
    await page.goto(url);
    await settle(page, inFlight);
  };
  await home();
  for (let n = 0; n < MAX_CLICKS; n++) {
    if (new URL(page.url()).pathname !== new URL(url, page.url()).pathname) await home();
    const all = await controls(page);
    let index = all.findIndex((c) => c.usable && !SKIP.test(c.key) && !clicked.has(c.key));
    if (index >= 0) {
      clicked.add(all[index]!.key);
      openersTried = new Set();
    } else {
      index = all.findIndex((c) => c.usable && c.opener && !SKIP.test(c.key) && !openersTried.has(c.key));
      if (index < 0) break;
      openersTried.add(all[index]!.key);
    }
    // An overlay (a dialog) can cover a control listed under it: Escape closes the dialog, and the loop goes on.
    await page
      .locator(CONTROLS)
      .nth(index)
      .click({ timeout: 2_000 })
      .catch(() => page.keyboard.press("Escape"));
    await settle(page, inFlight);
  }
  return [...clicked];
}

async function refusalText(page: Page): Promise<string | null> {
  const text = await page
    .locator("body")
    .innerText()
    .catch(() => "");
  return /needs the \w+ role/.exec(text)?.[0] ?? null;
}

/** A viewer's editor: no file operations, and typing into Monaco changes nothing (no "Unsaved changes"). */
async function expectReadOnlyEditor(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await expect(page.getByTestId("read-only")).toBeVisible();
  await expect(page.getByRole("button", { name: "+ New file" })).toHaveCount(0);
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.type("typed by a viewer");
  await expect(page.locator(".monaco-editor .view-lines").first()).not.toContainText("typed by a viewer");
  await expect(page.getByTestId("unsaved")).toHaveCount(0);
}

async function visitAll(browser: Browser, role: "viewer" | "member"): Promise<void> {
  const ownerContext = await browser.newContext();
  const owner = await ownerContext.newPage();
  const ownerUser = newUser("owner");
  await signUp(owner, ownerUser);
  const seeded = await seedWorkspace(ownerUser);
  const invitePath = await invite(owner, role);
  await ownerContext.close();

  const { page, refusals, inFlight } = await watchedPage(browser, newUser(role), invitePath);
  const seen: string[] = [];
  page.on("framenavigated", () => void refusalText(page).then((t) => t && seen.push(`${t} (on ${page.url()})`)));
  // The run page first: the viewer's Eval checkpoint was the control that was offered and refused.
  const pages = [
    `/runs/${seeded.runId}`,
    `/experiments/${seeded.experimentId}`,
    "/experiments",
    "/runs",
    `/compare?runs=${seeded.runId},${seeded.otherRunId}&baseline=${seeded.runId}`,
    "/settings/workspace",
    "/settings",
  ];
  for (const url of pages) {
    const clicked = await clickEverything(page, inFlight, url);
    const shown = await refusalText(page);
    if (shown) seen.push(`${shown} (on ${page.url()})`);
    expect(clicked.length, `${url}: something to click`).toBeGreaterThan(0);
    expect(refusals, `${role} on ${url} (clicked: ${clicked.join(" | ")})`).toEqual([]);
    expect(seen, `${role} on ${url}: a refusal shown`).toEqual([]);
    if (role === "viewer" && url.startsWith("/experiments/")) await expectReadOnlyEditor(page, url);
  }
  await page.context().close();
}

test("a viewer is offered no control the server refuses", async ({ browser }) => {
  test.setTimeout(900_000);
  await visitAll(browser, "viewer");
});

test("a member is offered no control the server refuses", async ({ browser }) => {
  test.setTimeout(900_000);
  await visitAll(browser, "member");
});
