/**
 * Rollbook's MCP client as the official conformance suite (@modelcontextprotocol/conformance) runs a client:
 * `<command> <server-url>`, with the scenario in MCP_CONFORMANCE_SCENARIO. It goes the way a run does —
 * connectRunMcp (McpHub, the SDK's streamable HTTP transport behind the runner's egress-guarded fetch):
 * connect and initialize, list the tools, call one — so the suite judges the client runs use, not a fresh
 * SDK client. What happened is printed as JSON lines (the suite keeps stdout); the exit status says whether
 * the scenario's part was done.
 *
 *   node --import tsx gpu-runner/src/mcp/conformance/client.ts http://localhost:PORT/mcp
 *
 * The suite's servers listen on localhost, which the egress policy refuses: run it with EGRESS_ALLOW naming
 * localhost, as an operator would (conformance.servertest.ts does).
 */
import { McpLaunchConfig } from "../../../../contracts";
import { parseEnv } from "../../../../contracts/env";
import { REPO_ROOT, RunnerEnv } from "../../env";
import { connectRunMcp } from "../run-connection";

const SERVER = "conformance";

const say = (event: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(event)}\n`);

/** What each scenario asks of the client once it is connected; false when that was not done. */
const SCENARIOS: Record<string, (call: (tool: string, args: Record<string, unknown>) => Promise<{ text: string; isError: boolean }>, ready: boolean, problems: string[]) => Promise<boolean>> = {
  // The handshake alone: the suite checks the initialize request. Its server declares no capabilities, so
  // a run would not use it (no tools) — that is the only failure that still means initialize succeeded.
  initialize: async (_call, ready, problems) => ready || (problems.length === 1 && /offers no tools \(it declares: nothing\)/.test(problems[0]!)),
  // The suite's add_numbers tool, called as a rollout would call it (arguments checked against its schema first).
  tools_call: async (call, ready) => {
    if (!ready) return false;
    const result = await call("add_numbers", { a: 5, b: 3 });
    say({ event: "called", tool: "add_numbers", result });
    return !result.isError && result.text.includes("8");
  },
};

async function main(): Promise<number> {
  const url = process.argv.at(-1);
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
  const act = SCENARIOS[scenario];
  if (!url || !URL.canParse(url) || !act) {
    process.stderr.write(`usage: MCP_CONFORMANCE_SCENARIO=<${Object.keys(SCENARIOS).join("|")}> client.ts <server-url> (got scenario '${scenario}', url '${url ?? ""}')\n`);
    return 2;
  }
  // The runner's own setting and parser: EGRESS_ALLOW as the operator writes it, nothing loosened here.
  const { EGRESS_ALLOW } = parseEnv(RunnerEnv.pick({ EGRESS_ALLOW: true }), process.env, "conformance client");
  const config = McpLaunchConfig.parse({ servers: { [SERVER]: { transport: "http", url } } });
  const mcp = await connectRunMcp(config, { allowStdio: false, sandbox: null, repoRoot: REPO_ROOT, egress: EGRESS_ALLOW });
  try {
    say({ event: "connected", ready: mcp.ready, problems: mcp.problems });
    const listed = await mcp.mcp.list();
    say({ event: "listed", servers: listed.map((s) => ({ name: s.name, ok: s.ok, tools: s.tools.map((t) => t.function.name) })) });
    const signal = new AbortController().signal;
    const done = await act((tool, args) => mcp.mcp.call(SERVER, tool, args, signal), mcp.ready.length === 1, mcp.problems);
    say({ event: "done", scenario, ok: done });
    return done ? 0 : 1;
  } finally {
    await mcp.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
