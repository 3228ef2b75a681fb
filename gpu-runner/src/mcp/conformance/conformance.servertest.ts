/**
 * Rollbook's MCP client against the official conformance suite for clients (@modelcontextprotocol/conformance,
 * its `initialize` and `tools_call` scenarios over streamable HTTP): the suite starts its scenario server and
 * runs client.ts, which connects the way a run does (connectRunMcp). A scenario passes when the suite says so
 * (exit 0, no failed or warning check) and its own checks are there and passed: the suite alone would pass a
 * client that never initializes (no initialize request, no initialize check), so the verdict also wants the
 * initialize check (initialize) and initialize as the first request the server got (tools_call).
 *   npx vitest run --project server gpu-runner/src/mcp/conformance/conformance.servertest.ts
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../env";

const HERE = import.meta.dirname;
const SUITE = path.join(REPO_ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const NODE20_SHIM = path.join(HERE, "node20-fs-glob.mjs");
/** The suite splits the command at spaces and appends the server URL. */
const ROLLBOOK_CLIENT = `${process.execPath} --import tsx ${path.join(HERE, "client.ts")}`;
const SKIPS_INITIALIZE = `${process.execPath} ${path.join(HERE, "fixtures/skips-initialize.mjs")}`;
/** The suite's servers listen on localhost (a random port), which the runner refuses unless its operator allows it. */
const ALLOW_SUITE_SERVER = { EGRESS_ALLOW: "localhost" };

type Check = { id: string; status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED"; details?: { mcpMethod?: string }; errorMessage?: string };
interface ScenarioRun {
  exitCode: number | null;
  checks: Check[];
  output: string;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-conformance-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Run one client scenario of the suite; its checks come from the results folder it writes. */
async function runScenario(scenario: "initialize" | "tools_call", command: string, env: Record<string, string> = {}): Promise<ScenarioRun> {
  const out = fs.mkdtempSync(path.join(tmp, `${scenario}-`));
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  if (!("EGRESS_ALLOW" in env)) delete childEnv.EGRESS_ALLOW;
  const child = spawn(process.execPath, ["--import", NODE20_SHIM, SUITE, "client", "--command", command, "--scenario", scenario, "-o", out, "--timeout", "60000"], {
    cwd: REPO_ROOT,
    env: childEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr.on("data", (c: Buffer) => (output += c.toString()));
  const exitCode = await new Promise<number | null>((resolve) => child.once("close", resolve));
  const [dir] = fs.readdirSync(out);
  const checks = dir ? (JSON.parse(fs.readFileSync(path.join(out, dir, "checks.json"), "utf8")) as Check[]) : [];
  return { exitCode, checks, output };
}

/** What must be in a passing scenario beyond the suite's own verdict: its checks, and a client that initialized first. */
function problems(scenario: "initialize" | "tools_call", run: ScenarioRun): string[] {
  const found: string[] = [];
  if (run.exitCode !== 0) found.push(`the suite exited ${run.exitCode}`);
  for (const c of run.checks) if (c.status === "FAILURE" || c.status === "WARNING") found.push(`${c.id}: ${c.status} ${c.errorMessage ?? ""}`);
  const required = scenario === "initialize" ? "mcp-client-initialization" : "tool-add-numbers";
  if (!run.checks.some((c) => c.id === required && c.status === "SUCCESS")) found.push(`no passed ${required} check`);
  if (scenario === "tools_call") {
    const methods = run.checks.filter((c) => c.id === "incoming-request" && c.details?.mcpMethod).map((c) => c.details!.mcpMethod);
    if (methods[0] !== "initialize") found.push(`the first request was ${methods[0] ?? "none"}, not initialize`);
  }
  return found;
}

describe("MCP conformance suite for clients (@modelcontextprotocol/conformance)", () => {
  for (const scenario of ["initialize", "tools_call"] as const) {
    it(`Rollbook's client (connectRunMcp) passes the '${scenario}' scenario over streamable HTTP`, async () => {
      const run = await runScenario(scenario, ROLLBOOK_CLIENT, ALLOW_SUITE_SERVER);
      expect(problems(scenario, run), run.output).toEqual([]);
    });
  }

  it("the verdict fails a client that skips initialize, though the suite's exit status alone passes it", async () => {
    const initialize = await runScenario("initialize", SKIPS_INITIALIZE);
    expect(initialize.exitCode, initialize.output).toBe(0);
    expect(problems("initialize", initialize)).toEqual(["no passed mcp-client-initialization check"]);
    const toolsCall = await runScenario("tools_call", SKIPS_INITIALIZE);
    expect(problems("tools_call", toolsCall)).toEqual(["the first request was tools/call, not initialize"]);
  });

  it("without EGRESS_ALLOW the runner's egress policy refuses the suite's localhost server: the scenario fails", async () => {
    const run = await runScenario("initialize", ROLLBOOK_CLIENT);
    expect(problems("initialize", run)).toEqual(["the suite exited 1", "no passed mcp-client-initialization check"]);
    expect(run.output).toMatch(/mcp\.servers\.conformance\.url: localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
  });
});
