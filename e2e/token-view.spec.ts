import fs from "node:fs";
import path from "node:path";
import { test, expect } from "@playwright/test";
import { newUser, signUp } from "./auth";

// The token view on a real run: a 1-step train run of say-the-word on the real model, then a rollout's
// Tokens section — every token a text span, coloured by trained-on and by ratio, with the details line.
// Screenshots go to $TOKEN_VIEW_SHOTS when set (how the PR's pictures were taken).
const TEMPLATE = path.resolve(import.meta.dirname, "../templates/say-the-word");
const read = (f: string) => fs.readFileSync(path.join(TEMPLATE, f), "utf8");

test("a trained rollout's tokens: trained-on colours, trainer logprobs and ratios near 1", async ({ page }) => {
  // Engine start, 8 rollouts and a training step on a 2-core CPU.
  test.setTimeout(600_000);
  await signUp(page, newUser("tokens"));
  await page.goto("/");
  await expect(page).toHaveURL(/\/experiments\/[^/]+$/);
  const experimentId = page.url().split("/").pop()!;
  const config = { ...JSON.parse(read("config.json")), num_steps: 1, groups_per_step: 2, rollouts_per_group: 4, eval_every: 0, sampling: { temperature: 1.0, max_tokens: 24 }, limits: { rollout_timeout_ms: 400_000 } };
  const files = { "scenario.ts": read("scenario.ts"), "reward.ts": read("reward.ts"), "tasks.jsonl": read("tasks.jsonl"), "config.json": JSON.stringify(config, null, 2) };
  // tRPC's batch wire format with superjson: the page's own session cookie authorises it.
  const res = await page.request.post("/api/trpc/runs.start?batch=1", { data: { 0: { json: { experimentId, files, kind: "train" } } } });
  expect(res.ok()).toBe(true);
  const started = (await res.json())[0].result.data.json as { ok: boolean; runId: string };
  expect(started.ok).toBe(true);

  await page.goto(`/runs/${started.runId}`);
  await expect(page.getByTestId("run-status")).toHaveText(/completed/i, { timeout: 540_000 });
  await page.getByTestId("rollout").first().click();
  await page.getByTestId("tokens-toggle").click();
  const view = page.getByTestId("token-view");
  await expect(view).toBeVisible();
  await expect(view.getByTestId("token-training-status")).toHaveAttribute("data-status", /trained|not_trained/);
  const tokens = view.getByTestId("token");
  expect(await tokens.count()).toBeGreaterThan(10);
  // Prompt text is shown as text, the chat template's special tokens included.
  await expect(tokens.first()).toHaveText("<|im_start|>");
  const shots = process.env.TOKEN_VIEW_SHOTS;
  if (shots) await page.screenshot({ path: path.join(shots, "token-view-trained.png"), fullPage: false });

  await view.getByTestId("token-mode-ratio").click();
  const sampled = view.locator("[data-testid=token][data-sampled=true]");
  await sampled.first().hover();
  await expect(view.getByTestId("token-tooltip")).toContainText("ratio");
  if ((await view.getByTestId("token-training-status").getAttribute("data-status")) === "trained") {
    expect(await view.locator("[data-testid=token][data-trained=true]").count()).toBe(await sampled.count());
    // Same weights sample and train: no token is outlined at the default threshold.
    expect(await view.locator("[data-testid=token][data-flagged=true]").count()).toBe(0);
    const corr = Number(await view.getByTestId("token-summary-corr").textContent());
    expect(corr).toBeGreaterThan(0.99);
  }
  if (shots) await page.screenshot({ path: path.join(shots, "token-view-ratio.png"), fullPage: false });
});

// A tool call's tokens: say-the-word with its reply forced to be a call to `say` (a named tool_choice: the engine
// writes the call up to its arguments, the model the rest under the schema's grammar; one enum property and no
// other keeps it short enough never to be cut). The sampled tokens hold the call's arguments (content) and its closing `}`,
// `</tool_call>` and the end of turn (scaffolding, dashed and muted); "Content only" hides the scaffolding.
const SAY_SCENARIO = `import { tool, type RolloutContext } from "rollbook";
const say = tool({
  name: "say",
  description: "Say a word",
  parameters: { type: "object", properties: { word: { type: "string", enum: ["apple", "river", "stone"] } }, required: ["word"], additionalProperties: false },
  execute: (args) => String(args.word),
});
export type Task = { word: string };
export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  const reply = await ctx.chat(
    [{ role: "system", content: "Answer with one word." }, { role: "user", content: \`Say the word \${ctx.task.word}.\` }],
    { tools: [say], tool_choice: { type: "function", function: { name: "say" } }, max_tokens: 24 },
  );
  return reply.toolCalls[0]?.function.arguments ?? reply.content;
}
`;

test("a tool call's tokens: scaffolding drawn apart from content, and 'Content only' hides it", async ({ page }) => {
  test.setTimeout(600_000);
  await signUp(page, newUser("tokens-tools"));
  await page.goto("/");
  await expect(page).toHaveURL(/\/experiments\/[^/]+$/);
  const experimentId = page.url().split("/").pop()!;
  const config = { ...JSON.parse(read("config.json")), num_steps: 1, groups_per_step: 1, rollouts_per_group: 2, eval_every: 0, limits: { rollout_timeout_ms: 400_000 } };
  const files = { "scenario.ts": SAY_SCENARIO, "reward.ts": read("reward.ts"), "tasks.jsonl": read("tasks.jsonl"), "config.json": JSON.stringify(config, null, 2) };
  const res = await page.request.post("/api/trpc/runs.start?batch=1", { data: { 0: { json: { experimentId, files, kind: "train" } } } });
  expect(res.ok()).toBe(true);
  const started = (await res.json())[0].result.data.json as { ok: boolean; runId: string; error?: string };
  expect(started.ok, started.error).toBe(true);

  await page.goto(`/runs/${started.runId}`);
  await expect(page.getByTestId("run-status")).toHaveText(/completed/i, { timeout: 540_000 });
  await page.getByTestId("rollout").first().click();
  await page.getByTestId("tokens-toggle").click();
  const view = page.getByTestId("token-view");
  await expect(view).toBeVisible();
  await expect(view.getByTestId("token-legend-scaffolding")).toBeVisible();
  const scaffolding = view.locator("[data-testid=token][data-role=scaffolding]");
  const content = view.locator("[data-testid=token][data-role=content]");
  // The call's closing tag (several tokens) and the turn's end are scaffolding; its arguments are content.
  await expect(scaffolding.filter({ hasText: "<|im_end|>" })).toHaveCount(1);
  expect((await scaffolding.allTextContents()).join("")).toContain("</tool_call>");
  expect((await content.allTextContents()).join("")).toMatch(/"word":·?"(apple|river|stone)"/);
  const scaffoldingCount = await scaffolding.count();
  await expect(view.getByTestId("token-summary-scaffolding")).toHaveText(String(scaffoldingCount));
  await scaffolding.first().hover();
  await expect(view.getByTestId("token-detail-role")).toHaveText("scaffolding");
  const shots = process.env.TOKEN_VIEW_SHOTS;
  if (shots) await view.screenshot({ path: path.join(shots, "token-view-tool-call.png") });

  const all = await view.getByTestId("token").count();
  await view.getByTestId("token-content-only").check();
  await expect(scaffolding).toHaveCount(0);
  await expect(view.getByTestId("token")).toHaveCount(all - scaffoldingCount);
  if (shots) await view.screenshot({ path: path.join(shots, "token-view-content-only.png") });
});
