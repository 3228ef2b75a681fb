/**
 * The REAL OpenPipe ART client (openpipe-art, pinned, from PyPI, in a venv of its own in the user cache:
 * scripts/art-venv.sh — minutes the first time, reused after) runs examples/art/log_groups.py, unmodified,
 * against a real HTTP server serving /api/art/v1 with the route's handler on a real Postgres; then Rollbook's
 * own API (the tRPC caller) shows the run, its steps, rollouts and eval.
 *
 * Offline: `import art` fetches LiteLLM's model price map from GitHub unless LITELLM_LOCAL_MODEL_COST_MAP=True
 * (it falls back to its bundled copy after a failed fetch anyway, with a warning); WANDB_MODE=disabled keeps
 * wandb from calling home should anything import it. The example uses only the client (no W&B login).
 *   npx vitest run --project server features/art/server/art-client.servertest.ts
 */
import http from "node:http";
import path from "node:path";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerFor, createTestDb, newWorkspace, userWithRole, type TestDb } from "@/server/test/harness";
import { createApiToken } from "@/features/workspace/server";
import { handleArtRequest } from "./art-api";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../../..");

let tdb: TestDb;
let ws: string;
let token: string;
let python: string;
let server: http.Server;
let baseUrl: string;
const db = () => tdb.handle.prisma;

/** The route's handler behind a plain Node HTTP server: what Next's catch-all route does with the request. */
function serve(): Promise<http.Server> {
  const srv = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", `http://${req.headers.host}`);
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
      const hasBody = req.method !== "GET" && req.method !== "HEAD";
      const request = new Request(url, {
        method: req.method,
        headers,
        ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: "half" } : {}),
      } as RequestInit);
      const segments = url.pathname.replace(/^\/api\/art\/v1\/?/, "").split("/").filter(Boolean);
      const answer = url.pathname.startsWith("/api/art/v1/") ? await handleArtRequest(request, segments, { db: db() }) : new Response("not found", { status: 404 });
      res.writeHead(answer.status, Object.fromEntries(answer.headers));
      res.end(Buffer.from(await answer.arrayBuffer()));
    })().catch((e: unknown) => {
      res.writeHead(500).end(String(e));
    });
  });
  return new Promise((resolve) => srv.listen(0, "127.0.0.1", () => resolve(srv)));
}

beforeAll(async () => {
  // The venv first: its first build downloads openpipe-art and its dependencies (minutes).
  const venv = await run("bash", [path.join(ROOT, "scripts/art-venv.sh")], { timeout: 20 * 60_000, maxBuffer: 10 * 1024 * 1024 });
  python = venv.stdout.trim().split("\n").at(-1)!;
  tdb = await createTestDb();
  ws = await newWorkspace(db());
  const owner = await userWithRole(db(), ws, "owner");
  token = (await createApiToken(db(), { userId: owner.id, workspaceId: ws, name: "notebook" })).token;
  server = await serve();
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 25 * 60_000);

afterAll(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await tdb?.drop();
});

describe("the real ART client", () => {
  it("examples/art/log_groups.py registers a model and logs two train steps and an eval; Rollbook's API shows them", async () => {
    const { stdout } = await run(python, [path.join(ROOT, "examples/art/log_groups.py")], {
      timeout: 120_000,
      env: { ...process.env, ROLLBOOK_URL: baseUrl, ROLLBOOK_API_KEY: token, LITELLM_LOCAL_MODEL_COST_MAP: "True", WANDB_MODE: "disabled" },
    });
    const out = JSON.parse(stdout.trim().split("\n").at(-1)!) as { model: { id: string; entity: string; project: string; name: string; run_id: string }; step: number };
    const slug = (await db().workspace.findUniqueOrThrow({ where: { id: ws } })).slug;
    expect(out.model).toMatchObject({ entity: slug, project: "art-example", name: "agent-001", run_id: out.model.id });
    // get_step(): a log-only run has no checkpoint.
    expect(out.step).toBe(0);

    const c = callerFor(db(), ws);
    const got = await c.runs.get({ id: out.model.id });
    expect(got).toMatchObject({ kind: "art", status: "running", currentStep: 2, rolloutCount: 16 });
    expect(got.artClient).toMatchObject({ entity: slug, project: "art-example", name: "agent-001", tokenName: "notebook" });
    expect(got.experiment.name).toBe("art-example");
    expect(got.steps.map((s) => [s.step, s.rollouts, s.groups_trainable])).toEqual([
      [1, 6, 2],
      [2, 6, 2],
    ]);
    expect(got.evals).toEqual([expect.objectContaining({ step: 2, rollouts: 4 })]);

    const train = await c.runs.trajectories({ runId: out.model.id, split: "train" });
    expect(train.items).toHaveLength(12);
    const t = train.items[0]!;
    expect(t.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "assistant"]);
    expect(t.messages[2]!.tool_calls?.[0]?.function.name).toBe("lookup");
    expect(t.messages[4]!.content).toBe(t.task && (t.task as { word: string }).word);
    expect(t.reward).toBe(1);
    expect(t.metrics).toMatchObject({ exact: 1, answer_len: 5 });
    expect((await c.runs.trajectories({ runId: out.model.id, split: "val" })).items).toHaveLength(4);

    // Run again with return_existing: the same model, and its steps continue.
    const again = await run(python, [path.join(ROOT, "examples/art/log_groups.py")], {
      timeout: 120_000,
      env: { ...process.env, ROLLBOOK_URL: baseUrl, ROLLBOOK_API_KEY: token, LITELLM_LOCAL_MODEL_COST_MAP: "True", WANDB_MODE: "disabled" },
    });
    expect((JSON.parse(again.stdout.trim().split("\n").at(-1)!) as { model: { id: string } }).model.id).toBe(out.model.id);
    expect((await c.runs.get({ id: out.model.id })).steps.map((s) => s.step)).toEqual([1, 2, 3, 4]);
  });

  it("examples/art/log_plain.py (plain requests, no ART) makes a log-only run: two steps, an eval, stopped", async () => {
    const { stdout } = await run(python, [path.join(ROOT, "examples/art/log_plain.py")], { timeout: 60_000, env: { ...process.env, ROLLBOOK_URL: baseUrl, ROLLBOOK_API_KEY: token } });
    const { model_id } = JSON.parse(stdout.trim().split("\n").at(-1)!) as { model_id: string };
    const got = await callerFor(db(), ws).runs.get({ id: model_id });
    expect(got).toMatchObject({ kind: "art", status: "stopped", currentStep: 2, rolloutCount: 5 });
    expect(got.experiment.name).toBe("trl-grpo");
    expect(got.steps.map((s) => [s.step, s.reward_mean, s.groups_trainable])).toEqual([
      [1, 0.5, 1],
      [2, 1, 0],
    ]);
    expect(got.evals).toEqual([expect.objectContaining({ step: 2, reward_mean: 1 })]);
  });

  it("a bad token is the client's AuthenticationError", async () => {
    const script = [
      "import asyncio, openai",
      "from art.serverless.client import Client",
      "async def main():",
      `    c = Client(api_key="rbk_not-a-token", base_url="${baseUrl}/api/art/v1")`,
      "    try:",
      '        await c.models.create(project="p", name="n", base_model="m")',
      "    except openai.AuthenticationError as e:",
      '        print("AuthenticationError", e.status_code)',
      "asyncio.run(main())",
    ].join("\n");
    const { stdout } = await run(python, ["-c", script], { timeout: 60_000, env: { ...process.env, LITELLM_LOCAL_MODEL_COST_MAP: "True", WANDB_MODE: "disabled" } });
    expect(stdout.trim().split("\n").at(-1)).toBe("AuthenticationError 401");
  });

  it("model.train_sft (SFT) is a 501 whose message says what to do instead (docs/art.md, Supervised fine-tuning)", async () => {
    // ART's ServerlessBackend uploads the examples to W&B Artifacts first (a no-op with WANDB_MODE=disabled),
    // then calls /preview/sft-training-jobs: Rollbook's answer is what the user reads.
    const script = [
      "import asyncio, art",
      "async def main():",
      `    backend = art.ServerlessBackend(api_key="${token}", base_url="${baseUrl}/api/art/v1")`,
      '    model = art.TrainableModel(name="sft-001", project="art-sft", base_model="HuggingFaceTB/SmolLM2-135M-Instruct")',
      "    await model.register(backend)",
      '    t = art.Trajectory(messages_and_choices=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], reward=0.0)',
      "    try:",
      "        await model.train_sft([t])",
      '        print("NO ERROR")',
      "    except Exception as e:",
      '        print("ERROR", type(e).__name__, str(e).replace(chr(10), " "))',
      "asyncio.run(main())",
    ].join("\n");
    const { stdout } = await run(python, ["-c", script], { timeout: 120_000, env: { ...process.env, LITELLM_LOCAL_MODEL_COST_MAP: "True", WANDB_MODE: "disabled" } });
    const last = stdout.trim().split("\n").at(-1)!;
    expect(last).toMatch(/^ERROR /);
    expect(last).toContain("501");
    expect(last).toContain("supervised fine-tuning (model.train_sft) is not supported by Rollbook");
    expect(last).toContain("ENGINE_MODEL");
  });

  it("ART's client on openai 3 is refused at registration, naming the fix; on openai 2 (this venv) it registers", async () => {
    // The headers ART's client (art.serverless.client.Client, on openai's base client) sends with openai 3: seen from
    // openpipe-art 0.5.18 + openai 3.57.0 (pip install --target, PYTHONPATH first), "Client/Python 3.57.0" and "3.57.0".
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json", "user-agent": "Client/Python 3.0.0", "x-stainless-package-version": "3.0.0" };
    const before = await db().run.count({ where: { workspaceId: ws } });
    const res = await fetch(`${baseUrl}/api/art/v1/preview/models`, { method: "POST", headers, body: JSON.stringify({ project: "p3", name: "n3", base_model: "HuggingFaceTB/SmolLM2-135M-Instruct" }) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain('pip install "openai>=2,<3"');
    expect(await db().run.count({ where: { workspaceId: ws } })).toBe(before);
    // The real client of this venv sends its openai 2.x version in the same headers, and registers.
    const script = [
      "import asyncio, openai",
      "from art.serverless.client import Client",
      "async def main():",
      `    c = Client(api_key="${token}", base_url="${baseUrl}/api/art/v1")`,
      '    m = await c.models.create(project="p2", name="n2", base_model="HuggingFaceTB/SmolLM2-135M-Instruct")',
      '    print("REGISTERED", openai.__version__, m.id)',
      "asyncio.run(main())",
    ].join("\n");
    const { stdout } = await run(python, ["-c", script], { timeout: 60_000, env: { ...process.env, LITELLM_LOCAL_MODEL_COST_MAP: "True", WANDB_MODE: "disabled" } });
    expect(stdout.trim().split("\n").at(-1)).toMatch(/^REGISTERED 2\./);
  });
});
