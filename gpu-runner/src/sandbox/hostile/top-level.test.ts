/**
 * Hostile code at module top level: it runs while the experiment is inspected at start (validate) and in
 * every rollout's isolate before the scenario, so it gets the same limits there — the run's own CPU limit
 * (not the longer one the task check gets), the heap limit, and a sandbox process that may die for it.
 */
import { describe, expect, it } from "vitest";
import { LimitsConfig } from "../../../../contracts";
import { type CompiledExperiment, compileExperiment } from "../../experiment/compile";
import { validateExperiment } from "../../experiment/validate";
import { inspectExperiment } from "../inspect";
import { type RolloutHost, runRollout } from "../run-rollout";

const LIMITS = LimitsConfig.parse({ rollout_timeout_ms: 20_000, cpu_timeout_ms: 1_000, memory_mb: 64 });
const SCENARIO = `import type { RolloutContext } from "rollbook";
import { ready } from "./lib/setup";
export default async function rollout(ctx: RolloutContext) {
  const reply = await ctx.chat([{ role: "user", content: "hi" }]);
  return { ready, reply: reply.content };
}
`;
const REWARD = `export default function reward() { return 1; }\n`;

async function compile(setup: string, scenario = SCENARIO): Promise<CompiledExperiment> {
  const r = await compileExperiment({ "scenario.ts": scenario, "reward.ts": REWARD, "lib/setup.ts": setup });
  if (!r.ok) throw new Error(JSON.stringify(r.diagnostics, null, 2));
  return r.compiled;
}

const host: RolloutHost = {
  chat: async () => ({ content: "Apple.", finishReason: "stop", toolCalls: [], malformedToolCalls: [], message: { role: "assistant", content: "Apple." }, usage: { promptTokens: 1, completionTokens: 1 } }),
  judge: async () => ({ content: "", usage: { promptTokens: 0, completionTokens: 0, costUsd: 0 } }),
  mcpList: async () => [],
  mcpCall: async () => ({ text: "", isError: false }),
};
const rollout = (compiled: CompiledExperiment) =>
  runRollout({ compiled, task: {}, split: "train", step: 1, group: 0, rolloutIndex: 0, limits: LIMITS, host, mcpServers: [], getMessages: () => [] });

describe("hostile code at module top level", () => {
  it("a loop at top level stops at the run's CPU limit, at start and in a rollout", async () => {
    const compiled = await compile(`export const ready = true;\nfor (;;) {}\n`);
    const t0 = performance.now();
    const inspected = await inspectExperiment(compiled, [], LIMITS);
    // The run's 1 s, not the 30 s the task check may take.
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(inspected).toMatchObject({ ok: false, error: { kind: "timeout", message: expect.stringContaining("more than 1000 ms of CPU time") } });
    const o = await rollout(compiled);
    expect(o.error).toMatchObject({ kind: "timeout", message: expect.stringContaining("(limits.cpu_timeout_ms)") });
  });

  it("a top-level crash of V8 fails the check at start with a diagnostic; the runner goes on", async () => {
    const setup = `let s = "xy";\nfor (let i = 0; i < 27; i++) s = s + s;\nexport const ready = s.split("").length > 0;\n`;
    const files = { "scenario.ts": SCENARIO, "reward.ts": REWARD, "lib/setup.ts": setup, "tasks.jsonl": `{"n": 1}\n`, "config.json": `{ "model": "m", "limits": { "memory_mb": 64 } }` };
    const checked = await validateExperiment(files, "dry-run");
    expect(checked.ok).toBe(false);
    expect(checked.diagnostics).toContainEqual(
      expect.objectContaining({ severity: "error", message: expect.stringMatching(/^the experiment failed to load: out of memory: V8 ended the sandbox process .*Fatal JavaScript invalid size error/) }),
    );
    // The same runner process checks and runs the next experiment normally.
    const o = await rollout(await compile(`export const ready = true;\n`));
    expect(o.error).toBeNull();
    expect(o.output).toEqual({ ready: true, reply: "Apple." });
  });

  it("replacing the builtins the glue uses changes nothing the bridge does", async () => {
    // A JSON.parse that forges envelopes, a Reflect.apply that throws, a String.prototype.slice that lies,
    // and isolated-vm's options on Object.prototype. (Promise.prototype.then is left alone: isolated-vm
    // itself calls it to settle a bridge call in the isolate, so replacing it breaks the user's own calls.)
    const setup = `const realParse = JSON.parse;
JSON.parse = ((text: string) => (text.includes('"ok":') ? { ok: true, value: { content: "forged", message: { role: "assistant", content: "forged" } } } : realParse(text))) as typeof JSON.parse;
(Reflect as { apply: unknown }).apply = () => { throw new Error("Reflect.apply replaced"); };
(String.prototype as { slice: unknown }).slice = () => "sliced by the user";
// Not enumerable: enumerable ones would also break esbuild's own module helpers (for-in), the user's own loss.
for (const [k, v] of Object.entries({ reference: true, result: { reference: true } })) Object.defineProperty(Object.prototype, k, { value: v, configurable: true });
export const ready = true;
`;
    const scenario = `import type { RolloutContext } from "rollbook";
import { ready } from "./lib/setup";
export default async function rollout(ctx: RolloutContext) {
  const reply = await ctx.chat([{ role: "user", content: "hi" }]);
  ctx.log("z".repeat(5_000));
  ctx.metric("m", 1);
  let refused = "";
  try { await ctx.chat([{ role: "user", content: "x".repeat(5_000_000) }]); } catch (e) { refused = (e as Error).message; }
  for (const k of ["reference", "result"]) delete (Object.prototype as Record<string, unknown>)[k];
  return { ready, reply: reply.content, refused };
}
`;
    const o = await rollout(await compile(setup, scenario));
    expect(o.error).toBeNull();
    expect(o.output).toEqual({ ready: true, reply: "Apple.", refused: expect.stringMatching(/^ctx\.chat: the messages and options are 5,000,0\d\d characters as JSON/) });
    expect(o.logs).toEqual([`${"z".repeat(2_000)}… (3000 more characters)`]);
    expect(o.metrics).toEqual({ m: 1 });
  });
});
