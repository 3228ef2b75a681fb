/**
 * MCP servers of an experiment: the `"mcp"` section of config.json. Each named server is reached over
 * stdio (the runner spawns a command), streamable HTTP or the older HTTP+SSE transport; its tools are
 * offered to the model and callable from the scenario as `ctx.mcp`. Written once here and imported by the
 * editor (validation, Monaco hovers from `.describe()`), the web server and the runner.
 *
 * Secrets never live in the config: `env` and `headers` values may say `${NAME}`, which the runner fills
 * in from its own environment when it connects (only names its operator shares through MCP_SECRET_VARS).
 */
import { z } from "zod";

/** `${NAME}` inside an env or header value; NAME is an environment variable name. */
export const SECRET_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Server names become part of tool names and of `ctx.mcp.<name>`, so they are identifiers. */
export const McpServerName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, "server names are identifiers: letters, digits and _, not starting with a digit, at most 64")
  .describe("The server's name in this experiment (an identifier); the scenario reaches its tools through ctx.mcp by this name.");

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "environment variable names are letters, digits and _, not starting with a digit");
// RFC 9110 token characters.
const HeaderName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, "not a valid HTTP header name");

/** A value that may contain `${NAME}` references; a `${` that does not form one is a typo worth catching. */
const ValueWithRefs = z.string().refine((v) => !v.replace(SECRET_REF, "").includes("${"), {
  message: "write secrets as ${NAME}, where NAME is a variable of the runner's environment (letters, digits, _)",
});

const ToolAllowList = z
  .array(z.string().min(1))
  .min(1)
  .optional()
  .describe(
    "Offer only these tools of the server to the model (and allow only them in ctx.mcp). Absent: all of them. " +
      "A small model's context fills quickly, and a server such as server-everything offers a dozen tools.",
  );

export const McpStdioServer = z
  .object({
    transport: z.literal("stdio").describe("The runner spawns `command` and speaks MCP over its stdin/stdout."),
    command: z
      .string()
      .min(1)
      .describe("Executable to run. Looked up in the repository's node_modules/.bin first, then PATH, so npm-installed servers work offline."),
    args: z.array(z.string()).default([]).describe("Arguments passed to the command as they are (no shell)."),
    env: z
      .record(EnvName, ValueWithRefs)
      .default({})
      .describe(
        "Environment of the server process. It gets only these (plus PATH, HOME and a few harmless basics): none of the " +
          "runner's own variables leak in. Secrets as ${NAME}, filled in from the runner's environment.",
      ),
    cwd: z.string().min(1).optional().describe("Working directory, relative to the repository root. Absent: the repository root."),
    tools: ToolAllowList,
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
          { message: 'an Authorization header must take its secret from the runner\'s environment, e.g. "Bearer ${API_TOKEN}"' },
        )
        .describe("HTTP headers sent with every request. Secrets as ${NAME}, filled in from the runner's environment."),
      tools: ToolAllowList,
    })
    .strict();

export const McpHttpServer = remoteServer("http", "Streamable HTTP (the current MCP HTTP transport): one endpoint, usually ending in /mcp.");
export const McpSseServer = remoteServer("sse", "The older HTTP+SSE transport (deprecated by MCP in 2025-03): the SSE endpoint, usually ending in /sse.");

export const McpServerConfig = z.discriminatedUnion("transport", [McpStdioServer, McpHttpServer, McpSseServer], {
  error: 'transport must be "stdio" (with command), "http" (streamable HTTP, with url) or "sse" (with url)',
});

export const McpConfig = z
  .object({
    servers: z
      .record(McpServerName, McpServerConfig)
      .default({})
      .describe('MCP servers by name, e.g. { "everything": { "transport": "stdio", "command": "mcp-server-everything" } }.'),
    connect_timeout_ms: z
      .number()
      .int()
      .min(100)
      .max(300_000)
      .default(10_000)
      .describe("How long a server may take to start and answer initialize. Local servers answer in well under a second; a broken one should not hold up the run."),
    list_timeout_ms: z
      .number()
      .int()
      .min(100)
      .max(300_000)
      .default(10_000)
      .describe("How long listing a server's tools may take, once connected."),
    call_timeout_ms: z
      .number()
      .int()
      .min(100)
      .max(3_600_000)
      .default(30_000)
      .describe(
        "Default limit of one tool call. Below limits.rollout_timeout_ms (60 s by default), so a hung tool fails as a tool " +
          "timeout the scenario can catch instead of timing out the whole rollout.",
      ),
    max_result_chars: z
      .number()
      .int()
      .min(100)
      .max(10_000_000)
      .default(16_000)
      .describe("Longest tool result text kept; longer results are cut with a note. Results go into the model's context and every stored trajectory."),
  })
  .strict();

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
