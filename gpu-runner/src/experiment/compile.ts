/**
 * An experiment's TypeScript → one sandbox-ready script. Type checking (TypeScript, typecheck.ts) and
 * bundling (esbuild, bundle.ts) are separate because TypeScript reports errors against the user's own lines,
 * and esbuild strips types and bundles in milliseconds. Nothing runs here: user code only ever executes in
 * the sandbox (../sandbox/).
 */
import { createHash } from "node:crypto";
import type { Diagnostic } from "../../contracts";
import { typecheckExperiment } from "./typecheck";
import { bundleExperiment } from "./bundle";

export interface CompiledExperiment {
  /** IIFE script: the user's modules, the SDK runtime and zod; it installs the sandbox entry points. */
  js: string;
  /** sha256 (hex) of the script: the identity of the code that runs. */
  hash: string;
}

export type CompileResult = { ok: true; compiled: CompiledExperiment } | { ok: false; diagnostics: Diagnostic[] };

export async function compileExperiment(files: Record<string, string>): Promise<CompileResult> {
  const diagnostics = typecheckExperiment(files);
  if (diagnostics.some((d) => d.severity === "error")) return { ok: false, diagnostics };
  const bundle = await bundleExperiment(files);
  if (!bundle.ok) return { ok: false, diagnostics: bundle.diagnostics };
  // The inline source map changes with comments and whitespace; the identity is the code alone.
  const code = bundle.js.replace(/\n\/\/# sourceMappingURL=.*\s*$/, "");
  return { ok: true, compiled: { js: bundle.js, hash: createHash("sha256").update(code).digest("hex") } };
}
