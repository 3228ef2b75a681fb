import { spawn, execFileSync } from "node:child_process";
import path from "node:path";
import { test, expect, type APIRequestContext } from "@playwright/test";
import { newUser, signUp } from "./auth";

// A Tinker SDK loop (examples/tinker/rl_loop.py, the real `tinker` SDK) trained by the e2e stack's runner,
// watched in the browser while it runs: the run appears as kind Tinker with its client line, every sample
// arrives as a rollout without a reload, each optim_step as a step, and the group view shows the datums'
// advantages on their samples. Model text is shown as text.

const port = Number(process.env.E2E_PORT ?? 3100);
const base = `http://127.0.0.1:${port}`;
const ROOT = path.resolve(import.meta.dirname, "..");

async function trpc(request: APIRequestContext, p: string, input: unknown): Promise<unknown> {
  const res = await request.post(`/api/trpc/${p}`, { data: { json: input }, headers: { "content-type": "application/json" } });
  expect(res.status(), p).toBe(200);
  return ((await res.json()) as { result: { data: { json: unknown } } }).result.data.json;
}

test("a Tinker SDK loop is watched live: samples arrive as rollouts, optim_steps as steps, datums' advantages on the groups", async ({ browser }, testInfo) => {
  test.setTimeout(420_000);
  const context = await browser.newContext({ baseURL: base });
  const page = await context.newPage();
  await signUp(page, newUser("tinker"));
  const { token } = (await trpc(context.request, "account.createToken", { name: "tinker-e2e" })) as { token: string };

  const python = execFileSync("bash", [path.join(ROOT, "scripts/tinker-venv.sh")], { encoding: "utf8" }).trim().split("\n").at(-1)!;
  const hfHome = path.join(testInfo.outputPath("hf"));
  const child = spawn(python, [path.join(ROOT, "examples/tinker/rl_loop.py")], {
    env: { ...process.env, ROLLBOOK_URL: base, ROLLBOOK_API_KEY: token, HF_ENDPOINT: `${base}/api/tinker/hf`, HF_TOKEN: token, HF_HOME: hfHome, STEPS: "2", GROUPS: "2", GROUP_SIZE: "4", SEED: "3", NAME: "e2e-loop" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)));
  try {
    // The model is created first: the page opens on it before anything is sampled.
    await expect.poll(() => /"model_id": "([^"]+)"/.exec(out)?.[1] ?? null, { timeout: 120_000, message: err.slice(-2000) }).not.toBeNull();
    const modelId = /"model_id": "([^"]+)"/.exec(out)![1]!;
    await page.goto(`/runs/${modelId}`);
    await expect(page.getByTestId("art-client")).toContainText("Tinker client, token tinker-e2e");
    await expect(page.getByText("Tinker", { exact: true }).first()).toBeVisible();
    // Every sampled sequence arrives as a rollout on the open page (2 steps × 2 prompts × 4 samples).
    await expect.poll(async () => Number(await page.getByTestId("rollout-list").getAttribute("data-count")), { timeout: 300_000, message: err.slice(-2000) }).toBe(16);
    expect(await exited, err.slice(-2000)).toBe(0);
    await expect(page.getByTestId("run-status")).toHaveText(/running/i);
    await page.screenshot({ path: testInfo.outputPath("tinker-run-watched.png"), fullPage: true });
    // The group view: the client's advantages on the samples its datums trained.
    await page.getByRole("tab", { name: /Groups/ }).click();
    await expect(page.getByTestId("group").first()).toBeVisible();
    await expect(page.getByTestId("group-adv").filter({ hasText: /A [+−-]0\.\d/ }).first()).toBeVisible({ timeout: 30_000 });
    await page.screenshot({ path: testInfo.outputPath("tinker-groups.png"), fullPage: true });
  } finally {
    child.kill();
    await context.close();
  }
});
