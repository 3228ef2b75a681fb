/**
 * User TypeScript → two sandbox-ready scripts. Type checking (TypeScript, typecheck.ts) and bundling
 * (esbuild, bundle.ts) are separate because TypeScript 5.9 reports errors against the user's own lines,
 * and esbuild strips types and bundles in milliseconds. Nothing runs here: user code only ever executes in
 * the sandbox (../sandbox/run-rollout.ts).
 */
import { createHash } from "node:crypto";
import type { Diagnostic } from "../../contracts";
import { typecheckExperiment } from "./typecheck";
import { bundleUserFile } from "./bundle";

export { SDK_DTS } from "./sdk";

/** Global names the bundles assign their exports to inside the isolate. */
export const SCENARIO_GLOBAL = "__rollbook_scenario";
export const REWARD_GLOBAL = "__rollbook_reward";

export interface CompiledExperiment {
  /** IIFE script assigning scenario.ts's exports to globalThis.__rollbook_scenario (inline source map). */
  scenarioJs: string;
  /** IIFE script assigning reward.ts's exports to globalThis.__rollbook_reward (inline source map). */
  rewardJs: string;
  /** sha256 (hex) of both scripts: the identity of the code that runs. */
  hash: string;
}

export type CompileResult = { ok: true; compiled: CompiledExperiment } | { ok: false; diagnostics: Diagnostic[] };

export async function compileExperiment(files: { "scenario.ts": string; "reward.ts": string }): Promise<CompileResult> {
  const sources = { "scenario.ts": files["scenario.ts"], "reward.ts": files["reward.ts"] };
  const diagnostics = typecheckExperiment(sources);
  if (diagnostics.some((d) => d.severity === "error")) return { ok: false, diagnostics };

  const [scenario, reward] = await Promise.all([
    bundleUserFile("scenario.ts", SCENARIO_GLOBAL, sources),
    bundleUserFile("reward.ts", REWARD_GLOBAL, sources),
  ]);
  if (!scenario.ok || !reward.ok) {
    return {
      ok: false,
      diagnostics: [...(scenario.ok ? [] : scenario.diagnostics), ...(reward.ok ? [] : reward.diagnostics)],
    };
  }
  const hash = createHash("sha256")
    .update(`${scenario.js.length}:${scenario.js}`)
    .update(`${reward.js.length}:${reward.js}`)
    .digest("hex");
  return { ok: true, compiled: { scenarioJs: scenario.js, rewardJs: reward.js, hash } };
}
