/**
 * Issue 16, finding 5 and deliverable 4 (SSRF): every door through which a user makes the web server or
 * the runner send a request — webhooks, runner registration and later runner calls, judge endpoints, MCP
 * http/sse servers — refuses loopback, link-local (cloud metadata), private and other internal addresses
 * that the operator did not allow (EGRESS_ALLOW), names the field and the rule, and sends nothing there.
 * Real Postgres, the real tRPC procedures, the real runner server (engineless: no model is needed to be
 * refused), real local HTTP servers that record whatever reaches them.
 *   npx vitest run --project server server/security/egress.servertest.ts
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { McpLaunchConfig, type ExperimentFiles } from "@contracts";
import { createRunnerClient, type RunnerClient } from "@/gpu-runner/src/client";
import { McpHub } from "@/gpu-runner/src/mcp/hub";
import { REPO_ROOT } from "@/gpu-runner/src/env";
import { resetEnv } from "../env";
import { registerRunner, runnerById, runnerFetch } from "../runner-client";
import { raiseAlert } from "@/features/flags/server";
import { deliverDue } from "@/features/flags/server";
import { startEnginelessRunner, type EnginelessRunner } from "../test/engineless-runner";
import { callerFor, createTestDb, newWorkspace, templateFiles, type TestDb } from "../test/harness";

/** What a non-runner answers: it must never come back to the person registering it. */
const MARKER = "SECRET-INTERNAL-BODY-7f3a";

interface Recorder {
  url: string;
  port: number;
  requests: string[];
  close: () => Promise<void>;
}

/** An HTTP server on 127.0.0.1 that records every request and answers `respond`. */
async function recorder(respond: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<Recorder> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    req.resume();
    req.on("end", () => respond(req, res));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

let tdb: TestDb;
const db = () => tdb.handle.prisma;
let runner: EnginelessRunner;
let client: RunnerClient;
/** Answers like an internal service would: a JSON error carrying what must not leak. */
let internal: Recorder;
/** Answers a web page carrying what must not leak. */
let page: Recorder;
/** An OpenAI-compatible judge. */
let judge: Recorder;
/** Anything an MCP client would reach. */
let mcp: Recorder;
const savedAllow = process.env.EGRESS_ALLOW;

beforeAll(async () => {
  delete process.env.EGRESS_ALLOW;
  resetEnv();
  tdb = await createTestDb();
  runner = await startEnginelessRunner("egress"); // no EGRESS_ALLOW: nothing internal is allowed
  client = createRunnerClient(runner.url, runner.token);
  internal = await recorder((_req, res) => {
    res.writeHead(500, { "content-type": "application/json" }).end(
      JSON.stringify([{ error: { message: `${MARKER} postgres says hello`, code: -32603, data: { code: "INTERNAL_SERVER_ERROR" } } }]),
    );
  });
  page = await recorder((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end(`<html>${MARKER}</html>`));
  judge = await recorder((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({
        id: "j", object: "chat.completion", created: 0, model: "judge",
        choices: [{ index: 0, message: { role: "assistant", content: "SCORE: 1" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }),
    );
  });
  mcp = await recorder((_req, res) => res.writeHead(404).end("no"));
}, 180_000);

afterEach(() => {
  delete process.env.EGRESS_ALLOW;
  resetEnv();
});

afterAll(async () => {
  if (savedAllow === undefined) delete process.env.EGRESS_ALLOW;
  else process.env.EGRESS_ALLOW = savedAllow;
  resetEnv();
  await runner?.close();
  for (const r of [internal, page, judge, mcp]) await r?.close();
  await tdb?.drop();
});

const RULE_TAIL = "sends no requests there unless its operator allows it in EGRESS_ALLOW";

describe("webhooks", () => {
  it("saving one for 127.0.0.1:5432, [::1] or 169.254.169.254 is refused, naming the field and the rule; nothing is saved", async () => {
    const owner = callerFor(db(), await newWorkspace(db()));
    const cases: [string, RegExp][] = [
      ["http://127.0.0.1:5432/", /^url: 127\.0\.0\.1 is a loopback address; the web server sends no requests there/],
      ["http://[::1]/hook", /^url: ::1 is a loopback address; the web server sends no requests there/],
      ["http://169.254.169.254/latest/meta-data/", /^url: 169\.254\.169\.254 is a link-local address \(the cloud metadata service\);/],
      ["http://localhost:5432/", /^url: localhost resolves to (127\.0\.0\.1|::1), a loopback address;/],
      ["http://[::ffff:127.0.0.1]:5432/", /^url: ::ffff:7f00:1 is the IPv4-mapped form of 127\.0\.0\.1, a loopback address;/],
    ];
    for (const [url, message] of cases) await expect(owner.flags.setWebhook({ url }), url).rejects.toThrow(message);
    expect(await owner.flags.webhook()).toBeNull();

    // The operator can allow an internal receiver.
    process.env.EGRESS_ALLOW = `127.0.0.1:${internal.port}`;
    resetEnv();
    await expect(owner.flags.setWebhook({ url: `${internal.url}/hook` })).resolves.toMatchObject({ url: `${internal.url}/hook` });
    expect(internal.requests).toEqual([]); // saving sends nothing
  });

  it("one saved earlier (or while allowed) is checked again at delivery: the receiver gets nothing, the log names the rule", async () => {
    const ws = await newWorkspace(db());
    const owner = callerFor(db(), ws);
    // As if saved before this policy, or while EGRESS_ALLOW named it.
    await db().webhookEndpoint.create({ data: { workspaceId: ws, url: `${internal.url}/hook`, secret: `whsec_${Buffer.from("x".repeat(24)).toString("base64")}` } });
    await raiseAlert(db(), { workspaceId: ws, runId: null, kind: "run.failed", key: `${ws}:egress`, severity: "critical", title: "t", message: "m", data: {} });
    await deliverDue(db(), { now: new Date(), maxAttempts: 1 });
    expect(internal.requests).toEqual([]);
    const [d] = await owner.flags.deliveries();
    expect(d).toMatchObject({ status: "failed", attempts: 1, lastStatusCode: null });
    expect(d!.lastError).toBe(`webhook url: 127.0.0.1 is a loopback address; the web server ${RULE_TAIL}`);
  });
});

describe("runner registration and calls to a workspace's runners", () => {
  it("169.254.169.254 is refused before any request, naming the url field", async () => {
    const owner = callerFor(db(), await newWorkspace(db()));
    await expect(owner.runners.register({ name: "meta", url: "http://169.254.169.254/", token: "whatever-token" })).rejects.toThrow(
      /^url: 169\.254\.169\.254 is a link-local address \(the cloud metadata service\); the web server sends no requests there/,
    );
    expect(await db().runner.count({ where: { name: "meta" } })).toBe(0);
  });

  it("a 127.0.0.1 URL not allow-listed is refused, and the server there sees no request", async () => {
    const owner = callerFor(db(), await newWorkspace(db()));
    const before = internal.requests.length;
    const err = await owner.runners.register({ name: "local-db", url: internal.url, token: "whatever-token" }).catch((e: Error) => e);
    expect((err as Error).message).toBe(`url: 127.0.0.1 is a loopback address; the web server ${RULE_TAIL}`);
    expect(internal.requests.length).toBe(before);
    expect(await db().runner.count({ where: { name: "local-db" } })).toBe(0);
  });

  it("allowed, a server that is not a runner is named as such, and what it answered is not echoed", async () => {
    process.env.EGRESS_ALLOW = `127.0.0.1:${internal.port}`;
    resetEnv();
    const owner = callerFor(db(), await newWorkspace(db()));
    const err = (await owner.runners.register({ name: "not-runner", url: internal.url, token: "whatever-token" }).catch((e: Error) => e)) as Error;
    expect(err.message).toBe(`url: ${internal.url} answered, but it is not a Rollbook runner`);
    expect(JSON.stringify(err)).not.toContain(MARKER);
    expect(internal.requests.length).toBeGreaterThan(0); // it was asked: the refusal is about what answered

    process.env.EGRESS_ALLOW = `127.0.0.1:${page.port}`;
    resetEnv();
    const html = (await owner.runners.register({ name: "a-page", url: page.url, token: "whatever-token" }).catch((e: Error) => e)) as Error;
    expect(html.message).toBe(`url: ${page.url} answered, but it is not a Rollbook runner`);
    expect(JSON.stringify(html)).not.toContain(MARKER);
    expect(await db().runner.count({ where: { name: { in: ["not-runner", "a-page"] } } })).toBe(0);
  });

  it("every later call to a workspace's runner is checked (registered while allowed, refused once not); the operator's runner is not", async () => {
    const ws = await newWorkspace(db());
    const row = await registerRunner(db(), { name: `ws-runner-${ws}`, url: internal.url, token: "whatever-token", workspaceId: ws });
    const before = internal.requests.length;
    await expect((await runnerById(db(), row.id)).status()).rejects.toThrow(`url: 127.0.0.1 is a loopback address; the web server ${RULE_TAIL}`);
    await expect(runnerFetch(db(), row.id, "/checkpoints/x/1/adapter.tar.gz")).rejects.toThrow(/url: 127\.0\.0\.1 is a loopback address/);
    expect(internal.requests.length).toBe(before);

    // An instance runner (workspaceId null: set by the operator, RUNNER_URL) is the operator's to trust.
    const instance = await registerRunner(db(), { name: `instance-${ws}`, url: internal.url, token: "whatever-token" });
    await expect((await runnerById(db(), instance.id)).status()).rejects.toThrow();
    expect(internal.requests.length).toBeGreaterThan(before);
  });
});

/** The say-the-word template with a judge at `base_url` that the reward calls. */
function judgeFiles(baseUrl: string): ExperimentFiles {
  return {
    ...templateFiles({ num_steps: 1, groups_per_step: 1, rollouts_per_group: 2, judge: { base_url: baseUrl, model: "judge" } }),
    "reward.ts": `import { llmJudge } from "rollbook";
export default async function reward(input: { task: unknown; output: unknown }) {
  const verdict = await llmJudge(input, { rubric: "says the word" });
  return { reward: verdict.score };
}
`,
  };
}

const started: string[] = [];
afterEach(async () => {
  // On code without the policy a refused run would have started: stop it, so nothing outlives its test.
  for (const runId of started.splice(0)) await client.stop.mutate({ run_id: runId }).catch(() => undefined);
});

async function start(runId: string, files: ExperimentFiles) {
  started.push(runId);
  return client.start.mutate({ run_id: runId, workspace_id: "egress-ws", kind: "dry-run", files, resume: false });
}

describe("judge endpoints", () => {
  it("a run whose judge is at a local server is refused at start, naming judge.base_url; the server sees no request", async () => {
    const result = await start("egress-judge-1", judgeFiles(`${judge.url}/v1`));
    expect(result).toMatchObject({
      ok: false,
      error: `judge.base_url: 127.0.0.1 is a loopback address; this runner ${RULE_TAIL}`,
      diagnostics: [{ file: "config.json", message: expect.stringContaining("judge.base_url: 127.0.0.1 is a loopback address") }],
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(judge.requests).toEqual([]);
  });

  it("a re-score whose reward calls that judge (no run start to check it): refused before anything is sent, naming judge.base_url", async () => {
    const res = await client.rescore.mutate({
      workspace_id: "egress-ws",
      files: judgeFiles(`${judge.url}/v1`),
      kind: "train",
      trajectories: [{ id: "t1", split: "train", step: 0, group: 0, task: { word: "apple" }, output: "apple", messages: [{ role: "assistant", content: "apple" }] }],
    });
    expect(res.ok).toBe(true);
    const [scored] = res.ok ? res.results : [];
    expect(scored?.reward).toBeNull();
    expect(scored?.error?.message).toContain(`judge.base_url: 127.0.0.1 is a loopback address; this runner ${RULE_TAIL}`);
    expect(judge.requests).toEqual([]);
  });

  it("a file:// base_url is refused, naming judge.base_url", async () => {
    const result = await start("egress-judge-file", judgeFiles("file:///etc/passwd"));
    expect(result.ok).toBe(false);
    expect(JSON.stringify(result)).toMatch(/judge\.base_url: file: URLs are not allowed|judge\.base_url[^"]*http/);
  });
});

describe("MCP http/sse servers", () => {
  it("a run with an MCP server on 127.0.0.1 (not allow-listed) is refused at start, naming the server's url; never contacted", async () => {
    const files = templateFiles({ num_steps: 1, groups_per_step: 1, rollouts_per_group: 2, mcp: { servers: { web: { transport: "http", url: `${mcp.url}/mcp` } } } });
    const result = await start("egress-mcp-1", files);
    expect(result).toMatchObject({ ok: false, error: `mcp.servers.web.url: 127.0.0.1 is a loopback address; this runner ${RULE_TAIL}` });
    await new Promise((r) => setTimeout(r, 300));
    expect(mcp.requests).toEqual([]);
  });

  it("a server pasted from an editor's config (mcpServers.<name>) is refused naming the key the user wrote, at that key", async () => {
    const files = templateFiles({ num_steps: 1, groups_per_step: 1, rollouts_per_group: 2, mcpServers: { web: { type: "http", url: `${mcp.url}/mcp` } } });
    const result = await start("egress-mcp-pasted", files);
    const message = `mcpServers.web.url: 127.0.0.1 is a loopback address; this runner ${RULE_TAIL}`;
    const urlLine = files["config.json"].split("\n").findIndex((l) => l.includes('"url"')) + 1;
    expect(result).toMatchObject({ ok: false, error: message, diagnostics: [{ file: "config.json", line: urlLine, message }] });
    await new Promise((r) => setTimeout(r, 300));
    expect(mcp.requests).toEqual([]);
  });

  it("where they connect: http and sse servers on 127.0.0.1 fail naming their url field, and are never contacted", async () => {
    const hub = new McpHub();
    try {
      await hub.connect(
        McpLaunchConfig.parse({ servers: { web: { transport: "http", url: `${mcp.url}/mcp` }, old: { transport: "sse", url: `${mcp.url}/sse` } }, connect_timeout_ms: 10_000 }),
        { allowStdio: false, repoRoot: REPO_ROOT, sandbox: null },
      );
      const byName = Object.fromEntries(hub.status().map((s) => [s.name, s]));
      expect(byName.web).toMatchObject({ state: "failed", error: expect.stringContaining(`mcp.servers.web.url: 127.0.0.1 is a loopback address; this runner ${RULE_TAIL}`) });
      expect(byName.old).toMatchObject({ state: "failed", error: expect.stringContaining(`mcp.servers.old.url: 127.0.0.1 is a loopback address; this runner ${RULE_TAIL}`) });
      expect(mcp.requests).toEqual([]);
    } finally {
      await hub.close();
    }
  });
});
