/**
 * The MCP config users paste from their editors and the MCP inspector (Claude Desktop, Cursor, VS Code):
 * `{"mcpServers": {"<name>": {"command", "args", "env"}}}` for stdio, `{"type", "url", "headers"}` for remote
 * servers. It is mapped onto Rollbook's own `mcp.servers` before the schema checks the config, so a pasted
 * server passes exactly the rules a written one does (URL, headers, `${NAME}` secrets, egress at start).
 *
 * What cannot map is refused naming its field: a command (experiments never start commands on the shared
 * runner, docs/security.md: an admin registers the stdio server and the experiment names it), a literal
 * secret, a server named in both places.
 */
import { parseJson } from "./json-position";

export interface PasteProblem {
  path: (string | number)[];
  message: string;
}

export interface PastedMcp {
  /** The config with `mcpServers` folded into `mcp.servers` (unchanged when there was none). */
  value: unknown;
  problems: PasteProblem[];
  /** What each pasted server became, at `mcpServers.<name>`, for Check to show. */
  notes: PasteProblem[];
  /** Names in `mcp.servers` that came from `mcpServers`: their schema errors are reported at the pasted keys. */
  pasted: ReadonlySet<string>;
}

/** The `type` spellings of the editors and the inspector, and the Rollbook transport each one is. */
const TYPES: Readonly<Record<string, "stdio" | "http" | "sse">> = {
  stdio: "stdio",
  sse: "sse",
  http: "http",
  "streamable-http": "http",
  streamableHttp: "http",
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const HAS_REF = /\$\{[A-Za-z_][A-Za-z0-9_]*\}/;
/** Names that say their value is a credential; an Authorization header has its own check in contracts/mcp.ts. */
const SECRET_NAME = /token|secret|password|passwd|api[-_]?key|access[-_]?key|private[-_]?key|credential|^pat$|_pat$/i;

function literalSecrets(values: unknown, where: (string | number)[]): PasteProblem[] {
  if (!isObject(values)) return [];
  return Object.entries(values).flatMap(([key, value]) =>
    typeof value === "string" && value !== "" && SECRET_NAME.test(key) && !/^(proxy-)?authorization$/i.test(key) && !HAS_REF.test(value)
      ? [{ path: [...where, key], message: `a literal secret; use a workspace secret reference (Team → Secrets), e.g. "\${${key.replace(/[^A-Za-z0-9_]/g, "_").toUpperCase()}}"` }]
      : [],
  );
}

function stdioRefusal(name: string, entry: Record<string, unknown>): string {
  const line = [entry.command, ...(Array.isArray(entry.args) ? entry.args : [])].filter((p) => typeof p === "string").join(" ");
  return (
    `experiments cannot start commands on the shared runner: a workspace admin registers ${line ? `\`${line}\`` : "the server"} ` +
    `(Team → MCP servers, with its env), and the experiment names it: "mcp": { "servers": { "${name}": { "transport": "stdio", "server": "<its registered name>" } } }`
  );
}

/** Map one pasted server; `undefined` when it cannot be (its problems say why). */
function mapServer(name: string, entry: unknown, problems: PasteProblem[]): Record<string, unknown> | undefined {
  const at = ["mcpServers", name];
  if (!isObject(entry)) {
    problems.push({ path: at, message: 'a server: { "command", "args", "env" } (stdio) or { "type", "url", "headers" } (remote)' });
    return undefined;
  }
  const { type: givenType, transport, ...rest } = entry;
  // FastMCP's canonical config spells the type `transport`; with both, `transport` is one too many.
  const typeKey = givenType === undefined && transport !== undefined ? "transport" : "type";
  const type = typeKey === "transport" ? transport : givenType;
  if (typeKey === "type" && transport !== undefined) {
    problems.push({ path: [...at, "transport"], message: 'unknown field: editors\' configs say "type"; Rollbook\'s own form goes under mcp.servers' });
  }
  let kind: "stdio" | "http" | "sse" | undefined;
  if (type !== undefined) {
    kind = typeof type === "string" && Object.hasOwn(TYPES, type) ? TYPES[type] : undefined;
    if (!kind) {
      problems.push({ path: [...at, typeKey], message: `${typeKey} must be "stdio", "sse", "http", "streamable-http" or "streamableHttp"` });
      return undefined;
    }
  } else if ("command" in entry) kind = "stdio";
  // A url alone (Cursor, FastMCP): SSE when its path ends in /sse, as FastMCP infers it, else streamable HTTP.
  else if ("url" in entry) kind = typeof entry.url === "string" && /\/sse\/?$/.test(entry.url.split(/[?#]/)[0]!) ? "sse" : "http";
  else {
    problems.push({ path: at, message: 'give "command" (a stdio server) or "url" (a remote server, with "type": "http" or "sse")' });
    return undefined;
  }
  if (kind === "stdio") {
    problems.push({ path: [...at, "command" in entry ? "command" : typeKey], message: stdioRefusal(name, entry) });
    problems.push(...literalSecrets(entry.env, [...at, "env"]));
    return undefined;
  }
  const secrets = literalSecrets(rest.headers, [...at, "headers"]);
  problems.push(...secrets);
  return secrets.length > 0 ? undefined : { transport: kind, ...rest };
}

/** Fold `mcpServers` into `mcp.servers`; the schema then checks the result as if it had been written there. */
export function mapPastedMcpServers(root: unknown): PastedMcp {
  const none: PastedMcp = { value: root, problems: [], notes: [], pasted: new Set() };
  if (!isObject(root) || !Object.hasOwn(root, "mcpServers")) return none;
  const { mcpServers, ...rest } = root;
  if (!isObject(mcpServers)) {
    return { ...none, value: rest, problems: [{ path: ["mcpServers"], message: 'servers by name, as editors write them: { "<name>": { "command": … } or { "type": "http", "url": … } }' }] };
  }
  // A malformed `mcp` or `mcp.servers` is the schema's to report; merging into it would hide that.
  const mcp = rest.mcp === undefined ? {} : rest.mcp;
  const written = isObject(mcp) ? (mcp.servers === undefined ? {} : mcp.servers) : undefined;
  if (!isObject(mcp) || !isObject(written)) return { ...none, value: rest };

  const problems: PasteProblem[] = [];
  const notes: PasteProblem[] = [];
  const servers: Record<string, unknown> = { ...written };
  const pasted = new Set<string>();
  for (const [name, entry] of Object.entries(mcpServers)) {
    if (Object.hasOwn(written, name)) {
      problems.push({ path: ["mcpServers", name], message: `also named in mcp.servers.${name}: keep one of the two` });
      continue;
    }
    const mapped = mapServer(name, entry, problems);
    if (!mapped) continue;
    servers[name] = mapped;
    pasted.add(name);
    notes.push({ path: ["mcpServers", name], message: `mcpServers.${name} → mcp.servers.${name} (${String(mapped.transport)}: ${String(mapped.url)})` });
  }
  return { value: { ...rest, mcp: { ...mcp, servers } }, problems, notes, pasted };
}

/**
 * Where a path of the parsed config came from in the text: `mcp.servers.<name>…` of a pasted server is
 * `mcpServers.<name>…`, its `transport` the pasted `type`. Other paths are their own.
 */
export function pastedSourcePath(pasted: ReadonlySet<string>, path: readonly (string | number)[]): (string | number)[] {
  const [a, b, name, field, ...more] = path;
  if (a !== "mcp" || b !== "servers" || typeof name !== "string" || !pasted.has(name)) return [...path];
  return ["mcpServers", name, ...(field === undefined ? [] : [field === "transport" ? "type" : field]), ...more];
}

/** `pastedSourcePath` for a config.json text, for messages positioned after parsing (the runner's start checks). */
export function configSourcePath(text: string, path: readonly (string | number)[]): (string | number)[] {
  const json = parseJson(text);
  return json.ok ? pastedSourcePath(mapPastedMcpServers(json.value).pasted, path) : [...path];
}

/**
 * `mcpServers` for the editor's JSON Schema of config.json (Monaco): RunConfig has no such field, since the
 * parser folds it into `mcp.servers`, yet the editor should neither flag it nor leave it without a hover.
 */
export const PASTED_MCP_SERVERS_JSON_SCHEMA = {
  type: "object",
  description:
    "MCP servers as editors and the MCP inspector write them (Claude Desktop, Cursor, VS Code): each becomes mcp.servers.<name> under " +
    'the same rules. Remote servers only: { "type": "http" | "streamable-http" | "streamableHttp" | "sse", "url": …, "headers": … }; ' +
    "a stdio command is refused (an admin registers it; name it in mcp.servers). Secrets as ${NAME} (Team → Secrets).",
  additionalProperties: { type: "object" },
} as const;
