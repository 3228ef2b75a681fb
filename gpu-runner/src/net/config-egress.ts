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
  /** The key in the parsed config (`mcp.servers.<name>.url`), for the diagnostic's position. */
  path: string[];
}

export interface ConfigEgressOptions {
  /** How names are resolved (tests); dns.lookup by default. */
  lookup?: LookupAll;
  /**
   * The key as the user wrote it, for the message: a server pasted as `mcpServers.<name>` became
   * `mcp.servers.<name>`, and a message naming the latter sends the user looking for a key they never wrote.
   * contracts' configSourcePath over the config text; the parsed path itself by default.
   */
  sourcePath?: (path: readonly string[]) => readonly (string | number)[];
}

export async function configEgressProblems(
  config: Pick<RunConfig, "judge" | "mcp">,
  allow: EgressAllow,
  options: ConfigEgressOptions = {},
): Promise<ConfigEgressProblem[]> {
  const { lookup, sourcePath = (path) => path } = options;
  const targets: { url: string; path: string[] }[] = [];
  if (config.judge.base_url !== null) targets.push({ url: config.judge.base_url, path: ["judge", "base_url"] });
  for (const [name, server] of Object.entries(config.mcp.servers)) {
    if (server.transport !== "stdio") targets.push({ url: server.url, path: ["mcp", "servers", name, "url"] });
  }
  const problems = await Promise.all(
    targets.map(async ({ url, path }) => ({
      path,
      message: await egressUrlProblem(url, { field: sourcePath(path).join("."), actor: "this runner", allow, lookup }),
    })),
  );
  return problems.flatMap((p) => (p.message === null ? [] : [{ message: p.message, path: p.path }]));
}
