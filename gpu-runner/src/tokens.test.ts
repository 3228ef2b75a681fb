/**
 * The runner's token settings (the web server's: server/runner-token.test.ts): no fixed default token (a
 * missing RUNNER_TOKEN is a clear error that says how to get one), and an external engine needs its
 * ENGINE_TOKEN.
 */
import { describe, expect, it } from "vitest";
import { loadEnv as loadRunnerEnv } from "./env";
import { randomToken } from "./tokens";

const strong = "a".repeat(64);
const runnerEnv = (vars: Record<string, string>) => loadRunnerEnv(vars as NodeJS.ProcessEnv);

describe("RUNNER_TOKEN", () => {
  it("the runner refuses to start without one, naming it and saying `npm start` generates one", () => {
    expect(() => runnerEnv({})).toThrow(/RUNNER_TOKEN is not set\. `npm start` .*generate one into \$DATA_DIR\/runner-token/);
    expect(() => runnerEnv({ RUNNER_TOKEN: "" })).toThrow(/RUNNER_TOKEN is not set/); // empty counts as unset
    expect(() => runnerEnv({ RUNNER_TOKEN: "short" })).toThrow(/RUNNER_TOKEN must be at least 8 characters/);
    expect(runnerEnv({ RUNNER_TOKEN: strong }).RUNNER_TOKEN).toBe(strong);
  });
});

describe("ENGINE_TOKEN", () => {
  it("is optional for a spawned engine and required with ENGINE_URL", () => {
    expect(runnerEnv({ RUNNER_TOKEN: strong }).ENGINE_TOKEN).toBeUndefined();
    expect(() => runnerEnv({ RUNNER_TOKEN: strong, ENGINE_URL: "http://gpu-box:8100" })).toThrow(/ENGINE_TOKEN: required with ENGINE_URL/);
    expect(runnerEnv({ RUNNER_TOKEN: strong, ENGINE_URL: "http://gpu-box:8100", ENGINE_TOKEN: strong }).ENGINE_TOKEN).toBe(strong);
    expect(() => runnerEnv({ RUNNER_TOKEN: strong, ENGINE_TOKEN: "short" })).toThrow(/ENGINE_TOKEN must be at least 16 characters/);
  });

  it("random tokens are 64 hex characters and differ", () => {
    const [a, b] = [randomToken(), randomToken()];
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(a).not.toBe(b);
  });
});
