/**
 * A model call whose connection to the engine is cut while the engine keeps running (issue 31: "engine
 * unreachable … (read ECONNRESET)" with no restart in the log, not retried, filed as the rollout's own
 * error). The real engine and model, say-the-word's real compile and sandbox, and a TCP proxy between the
 * runner's engine client and the engine that resets connections mid-answer (socket.resetAndDestroy()).
 *
 * One cut: the call is sent once more, same request and seed, and the rollout is the one an uncut run
 * gives (same reply, same tokens, one turn: nothing doubled). Every connection cut: the rollout fails as
 * the runner's failure (engine_connection), not as the model's or the user's.
 */
import net from "node:net";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_MODEL, RunConfig, isRunnerFault, type ExperimentFiles } from "../../../contracts";
import { EngineClient } from "../engine/client";
import type { EngineWatch } from "../engine/restart-recovery";
import { compileExperiment, type CompiledExperiment } from "../experiment/compile";
import { sharedEngine } from "../test-support/shared-engine";
import { NO_MCP } from "./run-mcp";
import { executeRollout } from "./execute";

const TEMPLATE = new URL("../../../templates/say-the-word/", import.meta.url);
const read = (f: string) => readFileSync(new URL(f, TEMPLATE), "utf8");
const CONFIG = JSON.parse(read("config.json")) as { sampling: object };
const FILES: ExperimentFiles = {
  "scenario.ts": read("scenario.ts"),
  "reward.ts": read("reward.ts"),
  "tasks.jsonl": read("tasks.jsonl"),
  // A few tokens and a long limit: one model call can take minutes on a loaded 2-core machine.
  "config.json": JSON.stringify({ ...CONFIG, sampling: { ...CONFIG.sampling, max_tokens: 4 }, limits: { rollout_timeout_ms: 480_000 } }),
};

/** Forwards to the engine; resets the first `resets` connections once the engine's answer starts coming back. */
interface ResettingProxy {
  port: number;
  resets: number;
  /** Chat requests that reached the engine through the proxy. */
  chatRequests: number;
  /** Connections reset so far. */
  reset: number;
  close(): Promise<void>;
}

async function startResettingProxy(target: URL): Promise<ResettingProxy> {
  const open = new Set<net.Socket>();
  const proxy: ResettingProxy = { port: 0, resets: 0, chatRequests: 0, reset: 0, close: async () => {} };
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    open.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.on("data", (chunk: Buffer) => {
      proxy.chatRequests += chunk.toString("latin1").split("POST /v1/chat/completions").length - 1;
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (proxy.reset < proxy.resets) {
        // Mid-answer: part of the response is through, then the connection is reset (RST, not FIN).
        proxy.reset++;
        client.write(chunk.subarray(0, Math.floor(chunk.length / 2)), () => client.resetAndDestroy());
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.port = (server.address() as net.AddressInfo).port;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      for (const s of open) s.destroy();
      server.close(() => resolve());
    });
  return proxy;
}

describe("a model call cut by a connection reset, the engine still running", () => {
  let engineUrl: string;
  let token: string;
  let compiled: CompiledExperiment;
  let proxy: ResettingProxy;

  beforeAll(async () => {
    const shared = await sharedEngine();
    if (!shared) throw new Error("no shared engine: run with the server project (vitest --project server)");
    ({ url: engineUrl, token } = shared);
    const c = await compileExperiment(FILES);
    if (!c.ok) throw new Error(JSON.stringify(c.diagnostics));
    compiled = c.compiled;
    proxy = await startResettingProxy(new URL(engineUrl));
  }, 600_000);

  afterAll(async () => {
    await proxy?.close();
  });

  /** The engine as the supervisor sees it: never restarted, answering /health (directly, not through the proxy). */
  const watch = (): EngineWatch => {
    const direct = new EngineClient(engineUrl, token);
    return {
      restarts: () => 0,
      lastRestart: () => null,
      restarting: () => false,
      probe: () => direct.health().then(() => undefined),
      waitReady: () => Promise.resolve(),
    };
  };

  const rollout = (resets: number) => {
    proxy.resets = resets;
    proxy.reset = 0;
    proxy.chatRequests = 0;
    // A client of its own per rollout: no kept-alive socket carries over from the run before.
    const engine = new EngineClient(`http://127.0.0.1:${proxy.port}`, token);
    return executeRollout({
      services: { engine, engineWatch: watch(), judge: { description: "none", chat: () => Promise.reject(new Error("no judge")) }, mcp: NO_MCP },
      compiled,
      runId: "engine-connection-reset",
      config: RunConfig.parse(JSON.parse(FILES["config.json"])),
      task: { index: 0, line: 1, split: "train", data: { word: "apple" } },
      split: "train",
      step: 0,
      group: 0,
      rolloutIndex: 0,
      model: DEFAULT_MODEL,
    });
  };

  it("sends the call once more, and the rollout is the one an uncut call gives", async () => {
    const uncut = await rollout(0);
    expect(uncut.trajectory.error).toBeNull();
    expect(proxy.chatRequests).toBe(1);

    const cut = await rollout(1);
    expect(proxy.reset).toBe(1);
    expect(proxy.chatRequests).toBe(2);
    expect(cut.trajectory.error).toBeNull();
    expect(cut.trajectory.logs).toContainEqual(expect.stringMatching(/^turn 1: the connection to the engine was cut \(.*\) with no engine restart; the model call was sent again$/));
    // Same request, same seed: the same reply and tokens, counted once; one turn, one training sample.
    expect(cut.trajectory.messages).toEqual(uncut.trajectory.messages);
    expect(cut.trajectory.reward).toBe(uncut.trajectory.reward);
    expect(cut.trajectory.tokens).toEqual(uncut.trajectory.tokens);
    expect(cut.trajectory.turns).toHaveLength(1);
    expect(cut.turns).toHaveLength(1);
    expect(cut.sample?.sequences.map((s) => s.tokens)).toEqual(uncut.sample?.sequences.map((s) => s.tokens));
  }, 1_200_000);

  it("files a call cut every time it is sent as the runner's failure, not the rollout's", async () => {
    const t = (await rollout(Number.POSITIVE_INFINITY)).trajectory;
    expect(proxy.chatRequests).toBe(2); // the call and one retry, no more
    expect(t.error?.kind).toBe("engine_connection");
    expect(isRunnerFault(t.error?.kind)).toBe(true);
    expect(t.error?.message).toMatch(/^the runner lost its connection to the engine twice on this model call \(no engine restart\): /);
    expect(t.reward).toBeNull();
  }, 1_200_000);
});
