/**
 * What a run's config.json names that lives in its workspace — registered stdio MCP servers, secrets, and
 * checkpoints of its runs — checked when a run is started (every problem a diagnostic at its key) and
 * resolved when it is handed to a runner (RunSpec.workspace_id, secrets, mcp_servers). The runner checks
 * model references again on its own (gpu-runner/src/loop/run-owner.ts).
 */
import {
  type Diagnostic,
  type McpServerDefinition,
  type RunConfig,
  type RunKind,
  type RunSpec,
  findKeyOffset,
  mcpDefinitionsUsed,
  offsetToPosition,
  parseCheckpointModel,
  parseRunConfig,
  resolveMcpConfig,
  secretRefs,
} from "@contracts";
import { AppError } from "@/server/errors";
import type { DbOrTx } from "@/server/db-types";
import { baseModelProblem, servedModels } from "@/features/runners/server";
import { mcpServerDefinitions } from "./mcp-servers";
import { secretValues } from "./secrets";

type Located = { path: (string | number)[]; message: string };

/** Every secret the config uses, with the key it is named at. */
function secretUses(config: RunConfig, definitions: Readonly<Record<string, McpServerDefinition>>): { name: string; path: string[] }[] {
  const uses: { name: string; path: string[] }[] = [];
  if (config.judge.api_key_secret) uses.push({ name: config.judge.api_key_secret, path: ["judge", "api_key_secret"] });
  for (const [server, s] of Object.entries(config.mcp.servers)) {
    if (s.transport === "stdio") {
      const def = Object.hasOwn(definitions, s.server) ? definitions[s.server] : undefined;
      for (const name of secretRefs(Object.values(def?.env ?? {}))) uses.push({ name, path: ["mcp", "servers", server, "server"] });
    } else {
      for (const name of secretRefs(Object.values(s.headers))) uses.push({ name, path: ["mcp", "servers", server, "headers"] });
    }
  }
  return uses;
}

/** A checkpoint `<run>@<step>` the config names (judge.model) must be one of this workspace's, and exist. */
async function checkpointProblem(db: DbOrTx, workspaceId: string, field: string, model: string): Promise<string | null> {
  const ref = parseCheckpointModel(model);
  if (!ref) return null;
  const found = await db.checkpoint.findFirst({ where: { step: ref.step, run: { id: ref.run, workspaceId } }, select: { step: true } });
  return found ? null : `${field}: model '${model}' not found: no checkpoint of that run and step in this workspace`;
}

interface Resolved {
  definitions: Record<string, McpServerDefinition>;
  secrets: Record<string, string>;
  problems: Located[];
}

async function resolve(db: DbOrTx, workspaceId: string, config: RunConfig): Promise<Resolved> {
  const problems: Located[] = [];
  const definitions = await mcpServerDefinitions(db, workspaceId, mcpDefinitionsUsed(config.mcp));
  const mcp = resolveMcpConfig(config.mcp, definitions);
  if (!mcp.ok) problems.push(...mcp.problems.map((p) => ({ path: p.path, message: `${p.path.join(".")}: ${p.message}` })));
  const uses = secretUses(config, definitions);
  const { values, missing } = await secretValues(db, workspaceId, [...new Set(uses.map((u) => u.name))]);
  for (const use of uses.filter((u) => missing.includes(u.name))) {
    problems.push({ path: use.path, message: `${use.path.join(".")}: uses the secret ${use.name}, which this workspace does not have (an admin adds it in Team → Secrets)` });
  }
  if (config.judge.model !== null && config.judge.base_url === null) {
    const problem = await checkpointProblem(db, workspaceId, "judge.model", config.judge.model);
    if (problem) problems.push({ path: ["judge", "model"], message: problem });
  }
  return { definitions, secrets: values, problems };
}

/**
 * The base models the config names must be ones a runner of this workspace serves: config.model, and judge.model
 * on the runner's own engine (a checkpoint there is checked by resolve). Only at Check, not at hand-over: the
 * dispatcher gives a run only to a runner serving its model anyway.
 */
async function modelProblems(db: DbOrTx, workspaceId: string, config: RunConfig): Promise<Located[]> {
  const served = await servedModels(db, workspaceId);
  const problems: Located[] = [];
  const model = baseModelProblem("model", config.model, served);
  if (model) problems.push({ path: ["model"], message: model });
  if (config.judge.model !== null && config.judge.base_url === null) {
    const judge = baseModelProblem("judge.model", config.judge.model, served);
    if (judge) problems.push({ path: ["judge", "model"], message: judge });
  }
  return problems;
}

/** The problems of a config's workspace references, each at its key in config.json (a start is refused on any). */
export async function runReferenceDiagnostics(db: DbOrTx, workspaceId: string, config: RunConfig, configText: string): Promise<Diagnostic[]> {
  const problems = [...(await modelProblems(db, workspaceId, config)), ...(await resolve(db, workspaceId, config)).problems];
  return problems.map((p) => {
    const offset = findKeyOffset(configText, p.path);
    const pos = offset === undefined ? { line: 1, column: 1 } : offsetToPosition(configText, offset);
    return { file: "config.json", ...pos, message: p.message, severity: "error" as const };
  });
}

/**
 * The part of a RunSpec that comes from the run's workspace, as it is now (a secret changed since the start
 * is sent with its new value; one deleted since refuses the hand-over with the reason).
 */
export async function workspaceRunSpec(
  db: DbOrTx,
  workspaceId: string,
  files: RunSpec["files"],
  kind: RunKind,
): Promise<Pick<RunSpec, "workspace_id" | "secrets" | "mcp_servers">> {
  const parsed = parseRunConfig(files["config.json"], kind);
  if (!parsed.ok) throw new AppError("BAD_INPUT", parsed.diagnostics[0]?.message ?? "config.json does not check", { diagnostics: parsed.diagnostics });
  const resolved = await resolve(db, workspaceId, parsed.config);
  if (resolved.problems.length > 0) throw new AppError("BAD_INPUT", resolved.problems.map((p) => p.message).join("; "));
  return { workspace_id: workspaceId, secrets: resolved.secrets, mcp_servers: resolved.definitions };
}
