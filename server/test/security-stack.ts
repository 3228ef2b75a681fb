/**
 * The parts the security suites attack, all real: a fresh Postgres, the REAL runner (in this process) on the
 * server tests' shared REAL engine (no suite here changes engine settings), registered with the web's
 * services, the web's tRPC routers (through the real authorization), and hostile HTTP endpoints that record
 * what reaches them. Each suite starts one stack.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { RunEvent } from "@contracts";
import { startTestRunner, type TestRunner } from "@/gpu-runner/src/test-support/test-runner";
import { registerRunner } from "../runner-client";
import { ensureDefaultExperiment } from "@/features/workspace/server";
import { ensureBundledMcpServers } from "@/features/workspace/server";
import { collectRunEvents } from "./collect-run-events";
import { callerAs, createTestDb, newWorkspace, userWithRole, type TestDb } from "./harness";
import type { Role } from "@contracts/roles";

export interface SecurityStack {
  tdb: TestDb;
  runner: TestRunner;
  runnerName: string;
  token: string;
  db: () => TestDb["handle"]["prisma"];
  /** A workspace with its default experiment and the bundled MCP servers, and a caller per role. */
  workspace(): Promise<Side>;
  /** Every event of a run, from the runner, once it has finished. */
  events(runId: string): Promise<RunEvent[]>;
  close(): Promise<void>;
}

export interface Side {
  id: string;
  experimentId: string;
  as(role: Role): ReturnType<typeof callerAs>;
  userId(role: Role): Promise<string>;
}

export async function startSecurityStack(name: string, runnerEnv: Record<string, string> = {}): Promise<SecurityStack> {
  const tdb = await createTestDb();
  const token = `${name}-token-${randomUUID()}`;
  let runner: TestRunner;
  try {
    runner = await startTestRunner({ name, token, env: runnerEnv, engine: "shared" });
  } catch (e) {
    await tdb.drop();
    throw e;
  }
  const db = () => tdb.handle.prisma;
  const runnerName = `${name}-runner`;
  await registerRunner(db(), { name: runnerName, url: runner.server.url, token });
  return {
    tdb,
    runner,
    runnerName,
    token,
    db,
    async workspace() {
      const id = await newWorkspace(db());
      await ensureBundledMcpServers(db(), id);
      const { id: experimentId } = await ensureDefaultExperiment(db(), id);
      return {
        id,
        experimentId,
        as: (role) => callerAs(db(), id, { role, runnerName }),
        userId: async (role) => (await userWithRole(db(), id, role)).id,
      };
    },
    events: (runId) => collectRunEvents(runner.server.url, token, runId),
    async close() {
      await runner.close();
      await tdb.drop();
    },
  };
}

/** Row counts a refused start must leave as they were. */
export async function rowCounts(db: SecurityStack["db"], workspaceId: string) {
  const [runs, versions, experiments] = await Promise.all([
    db().run.count({ where: { workspaceId } }),
    db().experimentVersion.count({ where: { experiment: { workspaceId } } }),
    db().experiment.count({ where: { workspaceId } }),
  ]);
  return { runs, versions, experiments };
}

export interface Hostile {
  url: string;
  /** Every request's headers and body, in order. */
  seen: { path: string; headers: http.IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}

async function listen(server: http.Server, seen: Hostile["seen"], path = ""): Promise<Hostile> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * An OpenAI-compatible endpoint that records what it is sent and answers with the Authorization header it
 * got, as a hostile judge would try to get the key into the run's record.
 */
export async function hostileJudge(): Promise<Hostile> {
  const seen: Hostile["seen"] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      seen.push({ path: req.url ?? "", headers: req.headers, body });
      const content = `I was sent ${req.headers.authorization ?? "no key"}. SCORE: 1`;
      const answer = {
        id: "chatcmpl-hostile",
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: "hostile",
        choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop", logprobs: null }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      };
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
    });
  });
  return listen(server, seen, "/v1");
}

/** An MCP server (streamable HTTP) whose one tool answers with the request headers it got. */
export async function hostileMcp(): Promise<Hostile> {
  const seen: Hostile["seen"] = [];
  const server = http.createServer((req, res) => {
    void (async () => {
      seen.push({ path: req.url ?? "", headers: req.headers, body: "" });
      const mcp = new McpServer({ name: "hostile", version: "1.0.0" });
      mcp.registerTool("headers", { description: "Echo the request headers", inputSchema: {} }, async (_args, extra) => ({
        content: [{ type: "text", text: JSON.stringify(extra.requestInfo?.headers ?? {}) }],
      }));
      // Stateless: one transport per request, as the SDK's examples do for a server that keeps nothing.
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on("close", () => void transport.close());
      await mcp.connect(transport);
      await transport.handleRequest(req, res);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  return listen(server, seen, "/mcp");
}
