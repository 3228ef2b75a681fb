/**
 * MCP servers of an experiment: the `"mcp"` section of config.json. Each named server is either a stdio
 * server that a workspace admin registered (Team → MCP servers: command, args, env), which the experiment
 * names, or a remote server reached over streamable HTTP or the older HTTP+SSE transport. Its tools are
 * offered to the model and callable from the scenario as `ctx.mcp`. Written once here and imported by the
 * editor (validation, Monaco hovers from `.describe()`), the web server and the runner.
 *
 * Why experiments cannot name a command: one runner serves every workspace, and config.json is written by
 * any member. A command in it would run on the shared machine as the member's choice (docs/security.md).
 * Admins register server definitions; the runner runs them in a sandbox (gpu-runner/src/mcp/sandbox.ts).
 *
 * Secrets never live in the config: `env` and `headers` values may say `${NAME}`, which names a secret of
 * the workspace (Team → Secrets). The web server hands the runner only the secrets a run refers to, and the
 * runner fills them in when it connects. The runner's own environment is never reachable by reference.
 */
import { z } from "zod";
import { identifierRegExp, identifierSource } from "./identifiers";

/** `${NAME}` inside an env or header value; NAME is a workspace secret's name (the shared grammar). */
export const SECRET_REF = new RegExp(`\\$\\{(${identifierSource("secret_name")})\\}`, "g");

/** A workspace secret's name: what `${NAME}` and `judge.api_key_secret` refer to. */
export const SecretName = z
  .string()
  .regex(identifierRegExp("secret_name"), "secret names are letters, digits and _, not starting with a digit, at most 64");

/** Every `${NAME}` a value refers to, in order of first use. */
export function secretRefs(values: Iterable<string>): string[] {
  const names = new Set<string>();
  for (const value of values) for (const m of value.matchAll(new RegExp(SECRET_REF.source, "g"))) names.add(m[1]!);
  return [...names];
}

/** Server names become part of tool names and of `ctx.mcp.<name>`, so they are identifiers. */
export const McpServerName = z
  .string()
  .regex(identifierRegExp("mcp_server_name"), "server names are identifiers: letters, digits and _, not starting with a digit, at most 64")
  .describe("The server's name in this experiment (an identifier); the scenario reaches its tools through ctx.mcp by this name.");

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "environment variable names are letters, digits and _, not starting with a digit");
// RFC 9110 token characters.
const HeaderName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, "not a valid HTTP header name");

/** A value that may contain `${NAME}` references; a `${` that does not form one is a typo worth catching. */
const ValueWithRefs = z.string().refine((v) => !v.replace(SECRET_REF, "").includes("${"), {
  message: "write secrets as ${NAME}, where NAME is a secret of this workspace (Team → Secrets): letters, digits, _",
});

const ToolAllowList = z
  .array(z.string().min(1))
  .min(1)
  .optional()
  .describe(
    "Offer only these tools of the server to the model (and allow only them in ctx.mcp). Absent: all of them. " +
      "A small model's context fills quickly, and a server such as server-everything offers a dozen tools.",
  );

const NO_COMMANDS =
  'experiments cannot start commands on the shared runner: a workspace admin registers the stdio server (Team → MCP servers) ' +
  'and the experiment names it, e.g. { "transport": "stdio", "server": "everything" }';
/** A field that only an admin's server definition may set: present in config.json, it is refused with the reason. */
const refusedField = z.never({ error: NO_COMMANDS }).optional().describe(NO_COMMANDS);

/** What a workspace admin registers: a stdio MCP server the runner may start for this workspace's runs. */
export const McpServerDefinition = z
  .object({
    command: z
      .string()
      .min(1)
      .max(500)
      .describe("Executable to run. Looked up in the runner's node_modules/.bin first, then PATH, so npm-installed servers work offline."),
    args: z.array(z.string().max(10_000)).max(200).default([]).describe("Arguments passed to the command as they are (no shell)."),
    env: z
      .record(EnvName, ValueWithRefs)
      .default({})
      .describe("The server's whole environment besides PATH and HOME: none of the runner's variables reach it. Secrets as ${NAME} (workspace secrets)."),
    network: z
      .boolean()
      .default(false)
      .describe("Whether the server may use the network. Off: it runs with no network at all. The runner's operator decides whether it may be on (MCP_STDIO_NETWORK)."),
    description: z.string().max(500).optional(),
  })
  .strict();
export type McpServerDefinition = z.infer<typeof McpServerDefinition>;

/**
 * What every workspace starts with registered: the MCP project's test server, an npm dependency of Rollbook
 * (the mcp-agent template names it). Admins may remove or replace it like any other.
 */
export const BUNDLED_MCP_SERVERS: Readonly<Record<string, McpServerDefinition>> = {
  everything: McpServerDefinition.parse({
    command: "mcp-server-everything",
    description: "The MCP project's test server (npm @modelcontextprotocol/server-everything), bundled with Rollbook",
  }),
};

export const McpStdioServer = z
  .object({
    transport: z.literal("stdio").describe("A stdio server this workspace's admins registered; the runner starts it in a sandbox and speaks MCP over its stdin/stdout."),
    server: McpServerName.describe("The name of the workspace's registered MCP server (Team → MCP servers)."),
    tools: ToolAllowList,
    command: refusedField,
    args: refusedField,
    env: refusedField,
    cwd: refusedField,
  })
  .strict();

const remoteServer = <T extends "http" | "sse">(transport: T, what: string) =>
  z
    .object({
      transport: z.literal(transport).describe(what),
      url: z.url({ protocol: /^https?$/, error: "an http:// or https:// URL" }).describe("The server's endpoint URL."),
      headers: z
        .record(HeaderName, ValueWithRefs)
        .default({})
        // An Authorization value is always a credential: a literal one would be stored in every run's config.
        .refine(
          (h) => Object.entries(h).every(([k, v]) => !/^(proxy-)?authorization$/i.test(k) || v.replace(SECRET_REF, "") !== v),
          { message: 'an Authorization header must take its secret from a workspace secret, e.g. "Bearer ${API_TOKEN}"' },
        )
        .describe("HTTP headers sent with every request. Secrets as ${NAME}: a secret of this workspace (Team → Secrets). Default {}: none."),
      tools: ToolAllowList,
    })
    .strict();

export const McpHttpServer = remoteServer("http", "Streamable HTTP (the current MCP HTTP transport): one endpoint, usually ending in /mcp.");
export const McpSseServer = remoteServer("sse", "The older HTTP+SSE transport (deprecated by MCP in 2025-03): the SSE endpoint, usually ending in /sse.");

export const McpServerConfig = z.discriminatedUnion("transport", [McpStdioServer, McpHttpServer, McpSseServer], {
  error: 'transport must be "stdio" (with server: a registered MCP server), "http" (streamable HTTP, with url) or "sse" (with url)',
});

export const McpConfig = z
  .object({
    servers: z
      .record(McpServerName, McpServerConfig)
      .default({})
      .describe('MCP servers by name, e.g. { "everything": { "transport": "stdio", "server": "everything" } } (a server the workspace registered) or { "search": { "transport": "http", "url": "https://…/mcp" } }. Default {}: none.'),
    connect_timeout_ms: z
      .number()
      .int()
      .min(100)
      .max(300_000)
      .default(10_000)
      .describe(
        "How long a server may take to start and answer initialize, 100 ms to 5 minutes. Local servers answer in well under a second; " +
          "a broken one should not hold up the run. Default 10 000 (10 s).",
      ),
    list_timeout_ms: z
      .number()
      .int()
      .min(100)
      .max(300_000)
      .default(10_000)
      .describe("How long listing a server's tools may take, once connected; 100 ms to 5 minutes. Default 10 000 (10 s)."),
    call_timeout_ms: z
      .number()
      .int()
      .min(100)
      .max(3_600_000)
      .default(30_000)
      .describe(
        "Default limit of one tool call, 100 ms to 1 hour. Below limits.rollout_timeout_ms (60 s by default), so a hung tool fails as a tool " +
          "timeout the scenario can catch instead of timing out the whole rollout. Default 30 000 (30 s).",
      ),
    max_result_chars: z
      .number()
      .int()
      .min(100)
      .max(10_000_000)
      .default(16_000)
      .describe(
        "Longest tool result text kept, 100 to 10 000 000 characters; longer results are cut with a note. Results go into the model's " +
          "context and every stored trajectory. Default 16 000.",
      ),
  })
  .strict();

/**
 * A stdio server as the runner starts it: the experiment's reference with the workspace's definition filled
 * in (the web server sends the definitions a run refers to in RunSpec.mcp_servers). `definition` is the
 * registered name, for messages.
 */
export const McpStdioLaunch = z
  .object({
    transport: z.literal("stdio"),
    definition: McpServerName.optional(),
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(EnvName, ValueWithRefs).default({}),
    network: z.boolean().default(false),
    tools: ToolAllowList,
  })
  .strict();
export const McpLaunchServer = z.discriminatedUnion("transport", [McpStdioLaunch, McpHttpServer, McpSseServer]);
/** The `"mcp"` section as the runner's hub connects it: every stdio reference resolved to what it runs. */
export const McpLaunchConfig = McpConfig.extend({ servers: z.record(McpServerName, McpLaunchServer).default({}) });
export type McpStdioLaunch = z.infer<typeof McpStdioLaunch>;
export type McpLaunchServer = z.infer<typeof McpLaunchServer>;
export type McpLaunchConfig = z.infer<typeof McpLaunchConfig>;

/** The registered server names an experiment's config refers to (its stdio servers). */
export function mcpDefinitionsUsed(config: McpConfig): string[] {
  return [...new Set(Object.values(config.servers).flatMap((s) => (s.transport === "stdio" ? [s.server] : [])))];
}

export type ResolvedMcp = { ok: true; config: McpLaunchConfig } | { ok: false; problems: { path: string[]; message: string }[] };

/** Fill each stdio reference in with its definition; a name with no definition is a problem naming its field. */
export function resolveMcpConfig(config: McpConfig, definitions: Readonly<Record<string, McpServerDefinition>>): ResolvedMcp {
  const servers: Record<string, McpLaunchServer> = {};
  const problems: { path: string[]; message: string }[] = [];
  for (const [name, server] of Object.entries(config.servers)) {
    if (server.transport !== "stdio") {
      servers[name] = server;
      continue;
    }
    const def = Object.hasOwn(definitions, server.server) ? definitions[server.server] : undefined;
    if (!def) {
      problems.push({ path: ["mcp", "servers", name, "server"], message: `no MCP server '${server.server}' is registered in this workspace (an admin adds it in Team → MCP servers)` });
      continue;
    }
    servers[name] = {
      transport: "stdio",
      definition: server.server,
      command: def.command,
      args: def.args,
      env: def.env,
      network: def.network,
      ...(server.tools ? { tools: server.tools } : {}),
    };
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, config: { ...config, servers } };
}

export type McpStdioServer = z.infer<typeof McpStdioServer>;
export type McpHttpServer = z.infer<typeof McpHttpServer>;
export type McpSseServer = z.infer<typeof McpSseServer>;
export type McpServerConfig = z.infer<typeof McpServerConfig>;
export type McpConfig = z.infer<typeof McpConfig>;
export type McpTransportKind = McpServerConfig["transport"];

/** One server as the run log shows it: what it is, whether it is usable, and if not, why. */
export const McpServerStatus = z.object({
  name: z.string(),
  transport: z.enum(["stdio", "http", "sse"]),
  /** `stdio: <command line>` or `http: <url>`, for messages. */
  target: z.string(),
  state: z.enum(["connecting", "ready", "failed", "closed"]),
  /** Names of the tools offered to the model (after the `tools` allow-list). */
  tools: z.array(z.string()),
  /** Why the server failed, naming it; null unless failed. */
  error: z.string().nullable(),
  /** stdio: the server process id while it runs. */
  pid: z.number().int().nullable(),
  /** stdio: the last lines the server wrote to stderr. */
  stderr: z.array(z.string()),
});
export type McpServerStatus = z.infer<typeof McpServerStatus>;
