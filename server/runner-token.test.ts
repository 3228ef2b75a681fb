/**
 * The web server's RUNNER_TOKEN: no fixed default, a clear refusal to start without it, a warning (never
 * the token itself) when it is short.
 */
import { describe, expect, it } from "vitest";
import { weakTokenWarning } from "@/contracts/tokens";
import { loadEnv as loadServerEnv } from "./env";
import { requireRunnerToken, startupRunnerToken } from "./runner-token";

const strong = "a".repeat(64);
const loadEnv = (vars: Record<string, string>) => loadServerEnv(vars as NodeJS.ProcessEnv);

describe("web server RUNNER_TOKEN", () => {
  it("the web server refuses to start without one (its other tools, e.g. migrations, do not need it)", () => {
    const env = loadEnv({});
    expect(env.RUNNER_TOKEN).toBeUndefined();
    expect(() => requireRunnerToken(env)).toThrow(/RUNNER_TOKEN is not set\. `npm start`/);
    expect(() => loadEnv({ RUNNER_TOKEN: "short" })).toThrow(/RUNNER_TOKEN must be at least 8 characters/);
    expect(requireRunnerToken(loadEnv({ RUNNER_TOKEN: strong }))).toBe(strong);
  });

  it("a token under 32 characters starts with a warning that never shows the token", () => {
    const warnings: string[] = [];
    expect(startupRunnerToken({ RUNNER_TOKEN: "only-20-characters!!" }, (w) => warnings.push(w))).toBe("only-20-characters!!");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/RUNNER_TOKEN is only 20 characters: use at least 32/);
    expect(warnings[0]).not.toContain("only-20-characters!!");
    startupRunnerToken({ RUNNER_TOKEN: strong }, (w) => warnings.push(w));
    expect(warnings).toHaveLength(1);
    expect(weakTokenWarning("RUNNER_TOKEN", "f".repeat(32))).toBeNull();
  });
});
