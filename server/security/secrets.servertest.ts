/**
 * Finding 2 of issue 16, re-tried as reported, and the secret store that replaces it, on the real web
 * services, the real runner and its real engine:
 *   - `judge.api_key_env: "RUNNER_TOKEN"` (or ENGINE_TOKEN, DATABASE_URL), a `file://` judge base_url, and an
 *     MCP header naming a runner variable are refused at Check (and by the runner itself), naming the field;
 *   - a workspace secret is write-only (never listed, stored sealed), reaches only the endpoint that names it,
 *     and never appears in an event, a log line, a stored row, an export or what the page loads — not even
 *     when a hostile judge and a hostile MCP server echo it back into the run.
 *   npx vitest run --project server server/security/secrets.servertest.ts
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRunnerClient } from "@/gpu-runner/src/client";
import { handleRunMetricsCsv, handleRunTrajectoriesJsonl } from "@/features/runs/server";
import { createApiToken } from "@/features/workspace/server";
import { ingestEvents } from "@/features/run-lifecycle/server";
import { templateFiles } from "../test/harness";
import { hostileJudge, hostileMcp, rowCounts, startSecurityStack, type Hostile, type SecurityStack, type Side } from "../test/security-stack";

let stack: SecurityStack;
let side: Side;
let judge: Hostile;
let mcp: Hostile;
const SECRET = `sk-live-${"s3cr3t".repeat(4)}-${process.pid}`;

beforeAll(async () => {
  judge = await hostileJudge();
  mcp = await hostileMcp();
  // The hostile endpoints listen on 127.0.0.1: this runner's operator allows that (EGRESS_ALLOW), so the
  // requests do leave and what comes back can be checked.
  stack = await startSecurityStack("secrets", { EGRESS_ALLOW: "127.0.0.1" });
  side = await stack.workspace();
}, 600_000);

afterAll(async () => {
  await judge?.close();
  await mcp?.close();
  await stack?.close();
}, 60_000);

const files = (config: Record<string, unknown>, more: Record<string, string> = {}) => ({ ...templateFiles({ groups_per_step: 1, rollouts_per_group: 2, ...config }), ...more });

async function refusedAtCheck(config: Record<string, unknown>): Promise<string[]> {
  const member = await side.as("member");
  const before = await rowCounts(stack.db, side.id);
  const res = await member.runs.start({ experimentId: side.experimentId, files: files(config), kind: "dry-run" });
  expect(await rowCounts(stack.db, side.id)).toEqual(before);
  expect(res.ok).toBe(false);
  return res.ok ? [] : res.diagnostics.map((d) => d.message);
}

describe("the runner's environment is not reachable by reference", () => {
  it("judge.api_key_env naming RUNNER_TOKEN, ENGINE_TOKEN or DATABASE_URL is refused at Check, and by the runner", async () => {
    for (const name of ["RUNNER_TOKEN", "ENGINE_TOKEN", "DATABASE_URL"]) {
      const messages = await refusedAtCheck({ judge: { base_url: judge.url, model: "m", api_key_env: name } });
      expect(messages).toContainEqual(expect.stringMatching(/^judge\.api_key_env: judge\.api_key_env is not read: the runner's environment is not shared with experiments/));
    }
    const client = createRunnerClient(stack.runner.server.url, stack.token);
    const direct = await client.start.mutate({
      run_id: "direct-env-key",
      workspace_id: side.id,
      kind: "dry-run",
      files: files({ judge: { base_url: judge.url, model: "m", api_key_env: "RUNNER_TOKEN" } }),
      resume: false,
    });
    expect(direct.ok).toBe(false);
    expect(judge.seen).toEqual([]);
  });

  it("a file:// judge base_url is refused, naming the field", async () => {
    expect(await refusedAtCheck({ judge: { base_url: "file:///etc/passwd", model: "m" } })).toContainEqual(expect.stringMatching(/^judge\.base_url: an http:\/\/ or https:\/\/ URL/));
  });

  it("an MCP header naming a runner variable (or any name the workspace has no secret for) is refused at Check", async () => {
    const messages = await refusedAtCheck({ mcp: { servers: { m: { transport: "http", url: mcp.url, headers: { Authorization: "Bearer ${RUNNER_TOKEN}" } } } } });
    expect(messages).toEqual(["mcp.servers.m.headers: uses the secret RUNNER_TOKEN, which this workspace does not have (an admin adds it in Team → Secrets)"]);
    expect(mcp.seen).toEqual([]);
  });
});

describe("workspace secrets", () => {
  it("are set by admins only, listed by name only, stored sealed", async () => {
    await expect((await side.as("member")).secrets.set({ name: "OPENAI_KEY", value: SECRET })).rejects.toMatchObject({ code: "FORBIDDEN" });
    const admin = await side.as("admin");
    await expect(admin.secrets.set({ name: "SHORT", value: "abc" })).rejects.toMatchObject({ code: "BAD_REQUEST" });
    await expect(admin.secrets.set({ name: "LINE", value: `${SECRET}\n` })).rejects.toMatchObject({ code: "BAD_REQUEST" });
    await admin.secrets.set({ name: "OPENAI_KEY", value: SECRET });
    const listed = await (await side.as("viewer")).secrets.list();
    expect(listed.map((s) => s.name)).toEqual(["OPENAI_KEY"]);
    expect(JSON.stringify(listed)).not.toContain(SECRET);
    const row = await stack.db().workspaceSecret.findFirstOrThrow({ where: { workspaceId: side.id, name: "OPENAI_KEY" } });
    expect(row.cipher).not.toContain(SECRET);
    expect(row.cipher).not.toContain(Buffer.from(SECRET).toString("base64").slice(0, 12));
    // A sealed value moved to another workspace's row does not open there.
    const other = await stack.workspace();
    await stack.db().workspaceSecret.create({ data: { workspaceId: other.id, name: "OPENAI_KEY", cipher: row.cipher } });
    const member = await other.as("member");
    const res = await member.runs.start({ experimentId: other.experimentId, files: files({ judge: { base_url: judge.url, model: "m", api_key_secret: "OPENAI_KEY" } }), kind: "dry-run" });
    expect(res).toMatchObject({ ok: false });
  });

  it("reach only the endpoint that names them, and never the run's record, exports or page — even when echoed back", async () => {
    const reward = `import { judgeChat, type RewardInput } from "rollbook";
export default async function reward({ output }: RewardInput<{ word: string }, string>) {
  const { content } = await judgeChat([{ role: "user", content: "Score: " + output }], { max_tokens: 8 });
  // A hostile judge's answer carries the key: thrown, it would land in the rollout's error.
  throw new Error("the judge said: " + content);
}
`;
    const scenario = `import type { RolloutContext } from "rollbook";
export interface Task { word: string }
export default async function rollout(ctx: RolloutContext<Task>) {
  const echoed = await ctx.mcp.call("m", "headers", {});
  ctx.log("headers: " + echoed.text);
  // Handed on to the model: what it is sent is recorded token by token.
  await ctx.chat([{ role: "user", content: echoed.text }], { max_tokens: 2 });
  return echoed.text;
}
`;
    const config = {
      judge: { base_url: judge.url, model: "hostile", api_key_secret: "OPENAI_KEY" },
      mcp: { servers: { m: { transport: "http", url: mcp.url, headers: { Authorization: "Bearer ${OPENAI_KEY}", "X-Key": "${OPENAI_KEY}" } } } },
    };
    const member = await side.as("member");
    const started = await member.runs.start({ experimentId: side.experimentId, files: files(config, { "scenario.ts": scenario, "reward.ts": reward }), kind: "dry-run" });
    if (!started.ok) throw new Error(`start refused: ${started.error}`);
    const events = await stack.events(started.runId);
    await ingestEvents(stack.db(), started.runId, events);

    // It was used: the endpoints got it, each as configured (positive control).
    expect(judge.seen.some((r) => r.headers.authorization === `Bearer ${SECRET}`)).toBe(true);
    expect(mcp.seen.some((r) => r.headers.authorization === `Bearer ${SECRET}` && r.headers["x-key"] === SECRET)).toBe(true);
    // It was echoed back into the run, and masked there.
    const rollouts = events.flatMap((e) => (e.type === "rollout.finished" ? [e.payload] : []));
    expect(rollouts).toHaveLength(2);
    for (const t of rollouts) {
      expect(t.logs.join("\n")).toContain("[secret OPENAI_KEY]");
      expect(t.error?.message).toContain("I was sent Bearer [secret OPENAI_KEY]");
    }

    // Nowhere: the runner's files (events, token logs) ...
    const runDir = path.join(stack.runner.runsDir, started.runId);
    for (const f of fs.readdirSync(runDir)) {
      const file = path.join(runDir, f);
      if (fs.statSync(file).isFile()) expect(fs.readFileSync(file, "utf8"), f).not.toContain(SECRET);
    }
    // ... the database (every row of the run, its snapshot, its events) ...
    const db = stack.db();
    const stored = await Promise.all([
      db.run.findMany({ where: { id: started.runId } }),
      db.runEvent.findMany({ where: { runId: started.runId } }),
      db.trajectory.findMany({ where: { runId: started.runId } }),
      db.experimentVersion.findMany({ where: { experimentId: side.experimentId } }),
    ]);
    expect(JSON.stringify(stored)).not.toContain(SECRET);
    // ... the exports ...
    const owner = await side.userId("owner");
    const { token } = await createApiToken(db, { userId: owner, workspaceId: side.id, name: "export" });
    const auth = { headers: { authorization: `Bearer ${token}` } };
    const jsonl = await handleRunTrajectoriesJsonl(new Request(`http://x/api/export/runs/${started.runId}/trajectories?tokens=1`, auth), started.runId, { db });
    const csv = await handleRunMetricsCsv(new Request(`http://x/api/export/runs/${started.runId}/metrics`, auth), started.runId, { db });
    expect(jsonl.status).toBe(200);
    expect(await jsonl.text()).not.toContain(SECRET);
    expect(await csv.text()).not.toContain(SECRET);
    // ... and what the run page loads, the token view included (the prompt the model got).
    const viewer = await side.as("viewer");
    const tokens = await viewer.runs.rolloutTokens({ runId: started.runId, rolloutId: rollouts[0]!.id });
    const promptText = tokens.sequences.flatMap((q) => q.tokens.map((t) => t.text)).join("");
    expect(promptText).toContain("[secret OPENAI_KEY]");
    const page = await Promise.all([
      viewer.runs.get({ id: started.runId }),
      viewer.runs.trajectories({ runId: started.runId }),
      viewer.runs.events({ runId: started.runId }),
      promptText,
    ]);
    expect(JSON.stringify(page)).toContain("[secret OPENAI_KEY]");
    expect(JSON.stringify(page)).not.toContain(SECRET);
  });
});
