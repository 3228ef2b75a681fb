import { test, expect, type APIRequestContext, type Browser, type BrowserContext, type Page } from "@playwright/test";
import { newUser, signUp } from "./auth";

// An ART client's log-only run (/api/art/v1, an API token) watched live in the browser by a second member
// of the workspace: the run appears with where its code runs, each logged group's rollouts arrive without a
// reload, model text is shown as text, and DELETE ends it "stopped" on the watcher's page.

const port = Number(process.env.E2E_PORT ?? 3100);
const base = `http://127.0.0.1:${port}`;

async function trpc(request: APIRequestContext, path: string, input: unknown): Promise<unknown> {
  const res = await request.post(`/api/trpc/${path}`, { data: { json: input }, headers: { "content-type": "application/json" } });
  expect(res.status(), path).toBe(200);
  return ((await res.json()) as { result: { data: { json: unknown } } }).result.data.json;
}

/** The owner and a second member (a viewer who joined by invite link), each in a browser context of their own. */
async function ownerAndWatcher(browser: Browser, prefix: string): Promise<{ owner: BrowserContext; watcher: BrowserContext; p1: Page; p2: Page }> {
  const owner = await browser.newContext({ baseURL: base });
  const watcher = await browser.newContext({ baseURL: base });
  const p1 = await owner.newPage();
  const p2 = await watcher.newPage();
  await signUp(p1, newUser(`${prefix}-owner`));
  await signUp(p2, newUser(`${prefix}-watcher`));
  await p1.goto("/settings/workspace");
  await p1.getByLabel("Invite role").selectOption("viewer");
  await p1.getByRole("button", { name: "Create invite link" }).click();
  const link = (await p1.getByTestId("invite-link").textContent())!.trim();
  await p2.goto(new URL(link).pathname);
  await p2.getByRole("button", { name: "Join workspace" }).click();
  await expect(p2).toHaveURL(/\/runs$/);
  return { owner, watcher, p1, p2 };
}

/** One group as ART serialises it: the prompt, then each sample as an OpenAI Choice with token-id logprobs. */
function group(word: string, replies: [string, number][]) {
  return {
    trajectories: replies.map(([reply, reward], i) => ({
      messages_and_choices: [
        { role: "user", content: `Say the word ${word}.` },
        {
          finish_reason: "stop",
          index: 0,
          message: { role: "assistant", content: reply },
          logprobs: { content: [{ token: `token_id:${100 + i}`, logprob: -0.5, bytes: null, top_logprobs: [] }] },
        },
      ],
      reward,
      metrics: { exact: reward },
    })),
  };
}

test("an ART client's run is watched live by a second member: groups arrive as logged, and it ends stopped", async ({ browser, playwright }, testInfo) => {
  test.setTimeout(240_000);
  const { owner, watcher, p2 } = await ownerAndWatcher(browser, "art");

  // The ART client: the owner's API token, nothing else (no cookies).
  const { token } = (await trpc(owner.request, "account.createToken", { name: "art-e2e" })) as { token: string };
  const art = await playwright.request.newContext({ baseURL: `${base}/api/art/v1/`, extraHTTPHeaders: { authorization: `Bearer ${token}` } });
  const created = await art.post("preview/models", { data: { project: "e2e-art", name: "agent-001", base_model: "SmolLM2-135M-Instruct", return_existing: true } });
  expect(created.status(), await created.text()).toBe(201);
  const model = (await created.json()) as { id: string; project: string; name: string };

  // The watcher opens the run before anything is logged.
  await p2.goto(`/runs/${model.id}`);
  await expect(p2.getByTestId("run-status")).toHaveText(/running/i);
  await expect(p2.getByTestId("art-client")).toContainText("ART client, token art-e2e");
  await expect(p2.getByTestId("art-client")).toContainText("e2e-art/agent-001");

  // A step's groups, logged by the client: they appear on the open page without a reload.
  const logged = await art.post(`preview/models/${model.id}/log`, {
    data: { model_id: model.id, split: "train", trajectory_groups: [group("apple", [["apple", 1], ["<b>pear</b>", 0]]), group("river", [["river", 1], ["lake", 0]])] },
  });
  expect(logged.ok(), await logged.text()).toBe(true);
  await expect.poll(async () => Number(await p2.getByTestId("rollout-list").getAttribute("data-count")), { timeout: 60_000 }).toBe(4);
  // Model text is text: the reply's markup is shown, not rendered.
  await p2.getByTestId("rollout").filter({ hasText: "<b>pear</b>" }).first().click();
  await expect(p2.getByText("<b>pear</b>").first()).toBeVisible();
  await expect(p2.locator("b", { hasText: "pear" })).toHaveCount(0);
  await p2.screenshot({ path: testInfo.outputPath("art-run-watched.png"), fullPage: true });

  // The client deletes its model: the run ends stopped on the watcher's page, its rollouts kept.
  const deleted = await art.delete(`preview/models/${model.id}`);
  expect(deleted.ok(), await deleted.text()).toBe(true);
  await expect(p2.getByTestId("run-status")).toHaveText(/stopped/i, { timeout: 60_000 });
  await expect(p2.getByTestId("rollout-list")).toHaveAttribute("data-count", "4");

  await art.dispose();
  await owner.close();
  await watcher.close();
});

test("an ART training job is watched live by a second member: its rollouts arrive before the step trains, then its checkpoint", async ({ browser, playwright }, testInfo) => {
  test.setTimeout(300_000);
  const { owner, watcher, p2 } = await ownerAndWatcher(browser, "art-train");

  const { token } = (await trpc(owner.request, "account.createToken", { name: "art-train-e2e" })) as { token: string };
  const art = await playwright.request.newContext({ baseURL: `${base}/api/art/v1/`, extraHTTPHeaders: { authorization: `Bearer ${token}` } });
  const created = await art.post("preview/models", { data: { project: "e2e-art-train", name: "agent-001", base_model: "SmolLM2-135M-Instruct", return_existing: true } });
  expect(created.status(), await created.text()).toBe(201);
  const model = (await created.json()) as { id: string; entity: string };
  await p2.goto(`/runs/${model.id}?tab=logs`);
  await expect(p2.getByTestId("art-client")).toContainText("ART client, token art-train-e2e");

  // Sampled as ART's model.openai_client() samples: its model name, logprobs on (the Choice carries token_id:<id>).
  const messages = [{ role: "user", content: "Say the word apple." }];
  const choices = await Promise.all(
    [1, 2, 3, 4].map(async (seed) => {
      const r = await art.post("chat/completions", { data: { model: `wandb-artifact:///${model.entity}/e2e-art-train/agent-001`, messages, max_tokens: 6, temperature: 1, seed, logprobs: true } });
      expect(r.ok(), await r.text()).toBe(true);
      return ((await r.json()) as { choices: unknown[] }).choices[0] as { message: { content: string } };
    }),
  );
  const trajectories = choices.map((c, i) => ({ messages_and_choices: [...messages, c], reward: i % 2 }));
  const job = await art.post("preview/training-jobs", { data: { model_id: model.id, trajectory_groups: [{ trajectories }], experimental_config: { learning_rate: 1e-3, ppo: true } } });
  expect(job.status(), await job.text()).toBe(201);
  const { id } = (await job.json()) as { id: string };

  // The watcher's open page: the job's log line and its rollouts, then the trained step's line, without a reload.
  await expect(p2.getByTestId("run-logs")).toContainText(`ART training job ${id}: step 1`, { timeout: 60_000 });
  await expect(p2.getByTestId("run-logs")).toContainText("replies trained on their sampled tokens", { timeout: 120_000 });
  await expect.poll(async () => {
    const page = (await (await art.get(`preview/training-jobs/${id}/events`)).json()) as { data: { type: string }[] };
    return page.data.map((e) => e.type).join(",");
  }, { timeout: 180_000 }).toMatch(/training_ended|training_failed/);
  const events = (await (await art.get(`preview/training-jobs/${id}/events`)).json()) as { data: { type: string }[] };
  expect(events.data.map((e) => e.type)).toEqual(["training_started", "gradient_step", "training_ended"]);
  const ckpts = (await (await art.get(`preview/models/${model.id}/checkpoints`)).json()) as { data: { step: number }[] };
  expect(ckpts.data.map((c) => c.step)).toEqual([1]);
  await p2.getByRole("tab", { name: /Rollouts/ }).click();
  await expect.poll(async () => Number(await p2.getByTestId("rollout-list").getAttribute("data-count")), { timeout: 60_000 }).toBe(4);
  await p2.screenshot({ path: testInfo.outputPath("art-training-watched.png"), fullPage: true });

  await art.dispose();
  await owner.close();
  await watcher.close();
});
