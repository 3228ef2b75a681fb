/**
 * Finding 1 of issue 16, re-tried as reported: an experiment's config.json declaring a stdio MCP server with
 * `"command": "sh", "args": ["-c", "…"]` ran that shell on the runner as the runner's user and read
 * DATA_DIR/runner-token. On the real web services, the real runner and its real engine:
 *   - such a config is refused at Check with the field and the way forward; no row is written and nothing runs,
 *     and the runner refuses it on its own when handed it directly;
 *   - only admins register the servers experiments may name;
 *   - a registered server that tries to read the runner's secrets from inside a run gets nothing: it runs in
 *     the bubblewrap sandbox, with its own environment only, and bwrap itself (pid 1 inside) with none.
 *   npx vitest run --project server server/security/command-execution.servertest.ts
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRunnerClient } from "@/gpu-runner/src/client";
import { REPO_ROOT } from "@/gpu-runner/src/env";
import { FIXTURES } from "@/gpu-runner/src/mcp/test-support";
import { ingestEvents } from "@/features/run-lifecycle/server";
import { templateFiles } from "../test/harness";
import { rowCounts, startSecurityStack, type SecurityStack, type Side } from "../test/security-stack";

let stack: SecurityStack;
let side: Side;
const marker = path.join(os.tmpdir(), `rollbook-pwned-${process.pid}`);
const tokenFile = path.join(REPO_ROOT, ".data", "runner-token");

beforeAll(async () => {
  // The operator lets stdio servers read the test fixtures (where the hostile server lives), nothing more.
  stack = await startSecurityStack("command-execution", { MCP_STDIO_READ_PATHS: FIXTURES, RUNNER_CAPACITY: "4" });
  side = await stack.workspace();
  // What the runner would hand out: a token file in its data dir (npm start generates one there).
  fs.mkdirSync(path.dirname(tokenFile), { recursive: true });
  if (!fs.existsSync(tokenFile)) fs.writeFileSync(tokenFile, "test-runner-token-file-0123456789", { mode: 0o600 });
}, 600_000);

afterAll(async () => {
  fs.rmSync(marker, { force: true });
  await stack?.close();
}, 60_000);

/** The say-the-word files with an "mcp" section and, optionally, another scenario. */
function filesWith(mcp: unknown, scenario?: string) {
  const files = templateFiles({ groups_per_step: 1, rollouts_per_group: 1, mcp });
  return scenario ? { ...files, "scenario.ts": scenario } : files;
}

const shell = { transport: "stdio", command: "sh", args: ["-c", `cat '${tokenFile}' > '${marker}'; id >> '${marker}'`] };

describe("a command in config.json", () => {
  it("is refused at Check with the field and the way forward; no row is written, nothing runs", async () => {
    const member = await side.as("member");
    const before = await rowCounts(stack.db, side.id);
    const res = await member.runs.start({ experimentId: side.experimentId, files: filesWith({ servers: { x: shell } }), kind: "dry-run" });
    expect(res.ok).toBe(false);
    if (res.ok) return;
    const messages = res.diagnostics.map((d) => `${d.file}:${d.line} ${d.message}`);
    expect(messages).toContainEqual(expect.stringMatching(/^config\.json:\d+ mcp\.servers\.x\.command: experiments cannot start commands on the shared runner: a workspace admin registers the stdio server \(Team → MCP servers\)/));
    expect(await rowCounts(stack.db, side.id)).toEqual(before);
    expect(fs.existsSync(marker)).toBe(false);
  });

  it("is refused by the runner on its own when handed to it directly (validate and start)", async () => {
    const client = createRunnerClient(stack.runner.server.url, stack.token);
    const files = filesWith({ servers: { x: shell } });
    const checked = await client.validate.mutate({ files, kind: "dry-run" });
    expect(checked.ok).toBe(false);
    expect(checked.diagnostics.map((d) => d.message)).toContainEqual(expect.stringContaining("experiments cannot start commands on the shared runner"));
    const started = await client.start.mutate({ run_id: "direct-shell", workspace_id: side.id, kind: "dry-run", files, resume: false });
    expect(started.ok).toBe(false);
    expect(fs.existsSync(marker)).toBe(false);
    expect(fs.existsSync(path.join(stack.runner.runsDir, "direct-shell"))).toBe(false);
  });

  it("a server name the workspace has not registered is refused at Check, naming the field", async () => {
    const member = await side.as("member");
    const res = await member.runs.start({ experimentId: side.experimentId, files: filesWith({ servers: { x: { transport: "stdio", server: "no_such" } } }), kind: "dry-run" });
    expect(res).toMatchObject({ ok: false });
    if (res.ok) return;
    expect(res.diagnostics.map((d) => d.message)).toEqual([
      "mcp.servers.x.server: no MCP server 'no_such' is registered in this workspace (an admin adds it in Team → MCP servers)",
    ]);
  });
});

describe("registered servers", () => {
  it("only admins register, change or remove them", async () => {
    const definition = { command: "sh", args: ["-c", "id"] };
    for (const role of ["viewer", "member"] as const) {
      const caller = await side.as(role);
      await expect(caller.mcpServers.set({ name: "evil", definition })).rejects.toMatchObject({ code: "FORBIDDEN" });
      await expect(caller.mcpServers.remove({ name: "everything" })).rejects.toMatchObject({ code: "FORBIDDEN" });
    }
    expect((await (await side.as("member")).mcpServers.list()).map((s) => s.name)).toEqual(["everything"]);
  });

  it("a registered server that probes the runner from inside a run reads none of its files, tokens, environment or runs", async () => {
    const admin = await side.as("admin");
    await admin.mcpServers.set({ name: "prober", definition: { command: "node", args: [path.join(FIXTURES, "prober.mjs")], env: { GIVEN: "yes" }, network: false } });
    const targets = [tokenFile, path.join(REPO_ROOT, ".data", "engine-token"), path.join(REPO_ROOT, ".data", "auth-secret"), path.join(REPO_ROOT, ".env")];
    const scenario = `import type { RolloutContext } from "rollbook";
export interface Task { word: string }
export default async function rollout(ctx: RolloutContext<Task>) {
  const reads = [];
  for (const p of ${JSON.stringify(targets)}) reads.push((await ctx.mcp.call("p", "read", { path: p })).text);
  const runs = (await ctx.mcp.call("p", "list", { path: ${JSON.stringify(stack.runner.runsDir)} })).text;
  const env = (await ctx.mcp.call("p", "env", {})).text;
  const who = (await ctx.mcp.call("p", "whoami", {})).text;
  const shell = (await ctx.mcp.call("p", "shell", { script: "cat /proc/1/environ; ls /work /root 2>&1" })).text;
  const bwrapEnv = (await ctx.mcp.call("p", "read", { path: "/proc/1/environ" })).text;
  return JSON.stringify({ reads, runs, env, who, shell, bwrapEnv });
}
`;
    const member = await side.as("member");
    const started = await member.runs.start({ experimentId: side.experimentId, files: filesWith({ servers: { p: { transport: "stdio", server: "prober" } } }, scenario), kind: "dry-run" });
    if (!started.ok) throw new Error(`start refused: ${started.error}`);
    const events = await stack.events(started.runId);
    await ingestEvents(stack.db(), started.runId, events);
    const rollout = events.find((e) => e.type === "rollout.finished");
    if (rollout?.type !== "rollout.finished") throw new Error(`no rollout: ${JSON.stringify(events.slice(-3))}`);
    expect(rollout.payload.error).toBeNull();
    const out = JSON.parse(rollout.payload.output as string) as { reads: string[]; runs: string; env: string; who: string; shell: string; bwrapEnv: string };
    for (const r of out.reads) expect(r).toMatch(/^error: ENOENT/);
    expect(out.runs).toMatch(/^error: ENOENT/);
    expect(Object.keys(JSON.parse(out.env) as object).sort()).toEqual(["GIVEN", "HOME", "PATH", "PWD"]);
    expect(JSON.parse(out.who)).toMatchObject({ uid: 65534, gid: 65534 });
    // bwrap's own process (pid 1 inside) started with nothing: the MCP SDK's defaults (HOME, PATH, SHELL, TERM,
    // USER, LOGNAME of the runner) used to be there (issue 29, item 6).
    expect(out.bwrapEnv).toBe("ok: ");
    const secret = fs.readFileSync(tokenFile, "utf8").trim();
    for (const text of [JSON.stringify(out), JSON.stringify(events)]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(stack.token); // the runner's own RUNNER_TOKEN, from its environment
    }
    // The run's log says where the server ran.
    const logs = events.flatMap((e) => (e.type === "run.log" ? [e.payload.message] : []));
    expect(logs).toContainEqual(expect.stringMatching(/^MCP server 'p' \(stdio: node .*prober\.mjs\) is ready/));
  });
});
