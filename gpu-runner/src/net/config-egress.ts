/**
 * The URLs of a run's config.json that the runner would send requests to (judge.base_url, each http/sse
 * MCP server's url), checked against the egress policy when the run starts: a refused one is reported
 * there, at its key, before any rollout depends on it. The connections are checked again when made.
 */
import type { RunConfig } from "../../../contracts";
import { egressUrlProblem, type LookupAll } from "./egress-check";
import type { EgressAllow } from "./egress-policy";

export interface ConfigEgressProblem {
  message: string;
  /** The key in config.json, for the diagnostic's position. */
  path: string[];
}

export async function configEgressProblems(
  config: Pick<RunConfig, "judge" | "mcp">,
  allow: EgressAllow,
  lookup?: LookupAll,
): Promise<ConfigEgressProblem[]> {
  const targets: { url: string; path: string[] }[] = [];
  if (config.judge.base_url !== null) targets.push({ url: config.judge.base_url, path: ["judge", "base_url"] });
  for (const [name, server] of Object.entries(config.mcp.servers)) {
    if (server.transport !== "stdio") targets.push({ url: server.url, path: ["mcp", "servers", name, "url"] });
  }
  const problems = await Promise.all(
    targets.map(async ({ url, path }) => ({ path, message: await egressUrlProblem(url, { field: path.join("."), actor: "this runner", allow, lookup }) })),
  );
  return problems.flatMap((p) => (p.message === null ? [] : [{ message: p.message, path: p.path }]));
}
