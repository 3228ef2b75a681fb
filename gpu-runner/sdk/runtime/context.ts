/** The `ctx` a scenario receives: the task, the model (chat), MCP servers, log and metric. */
import type * as Sdk from "../../../contracts/sdk/rollbook";
import { HostError, host, unwrap, type McpServerInfo } from "./host";
import { isTool, passthroughTool } from "./tools";
import { show } from "./show";

export interface RolloutMeta {
  task: unknown;
  split: "train" | "val";
  step: number;
  group: number;
  rolloutIndex: number;
}

/** Tools as the runner takes them: function specs only (execute stays in the sandbox). */
export function toolSpecs(tools: readonly (Sdk.AnyTool | Sdk.ToolSpec)[] | undefined): Sdk.ToolSpec[] | undefined {
  if (tools === undefined) return undefined;
  if (!Array.isArray(tools)) throw new TypeError("ctx.chat: options.tools must be an array of tools");
  return tools.map((t) => (isTool(t) ? t.spec : t));
}

function chat(messages: Sdk.ChatMessage[], options: Sdk.ChatOptions = {}): Promise<Sdk.ChatResult> {
  const { tools, ...rest } = options;
  const specs = toolSpecs(tools);
  return unwrap(host().chat(messages, specs ? { ...rest, tools: specs } : rest));
}


export function log(...args: unknown[]): void {
  host().log(args.map(show).join(" "));
}

export function metric(name: string, value: number): void {
  if (typeof name !== "string" || name.length === 0) throw new TypeError("ctx.metric: the name must be a non-empty string");
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new TypeError(`ctx.metric(${JSON.stringify(name)}): the value must be a finite number, got ${show(value)}`);
  }
  host().metric(name, value);
}

function makeMcp(servers: readonly string[]): Sdk.McpClient {
  let listing: Promise<McpServerInfo[]> | undefined;
  const list = () => (listing ??= unwrap(host().mcpList()));
  const call = (server: string, name: string, args: { [key: string]: unknown } = {}) =>
    unwrap(host().mcpCall(server, name, args));
  return Object.freeze({
    servers,
    async tools(server?: string) {
      const infos = await list();
      const chosen = server === undefined ? infos : infos.filter((s) => s.name === server);
      if (server !== undefined && chosen.length === 0) {
        throw new TypeError(`ctx.mcp.tools: no MCP server named "${server}" (config.json → mcp.servers has: ${servers.join(", ") || "none"})`);
      }
      const out: Sdk.Tool<{ [key: string]: unknown }, Sdk.McpToolResult>[] = [];
      const owner = new Map<string, string>();
      for (const info of chosen) {
        if (!info.ok) throw new HostError("McpError", `MCP server '${info.name}' is unavailable: ${info.error ?? "unknown reason"}`);
        for (const spec of info.tools) {
          const other = owner.get(spec.function.name);
          if (other) throw new TypeError(`ctx.mcp.tools(): servers '${other}' and '${info.name}' both have a tool "${spec.function.name}"; ask one server at a time`);
          owner.set(spec.function.name, info.name);
          out.push(passthroughTool(spec, (args) => call(info.name, spec.function.name, args)));
        }
      }
      return out;
    },
    call,
  });
}

export function makeContext(meta: RolloutMeta, mcpServers: readonly string[]): Sdk.RolloutContext<unknown> {
  return Object.freeze({
    task: meta.task,
    split: meta.split,
    step: meta.step,
    group: meta.group,
    rolloutIndex: meta.rolloutIndex,
    chat,
    mcp: makeMcp(mcpServers),
    log,
    metric,
  });
}
