/**
 * An experiment's TypeScript → one sandbox-ready script. Type checking (TypeScript, typecheck.ts) and
 * bundling (esbuild, bundle.ts) are separate because TypeScript reports errors against the user's own lines,
 * and esbuild strips types and bundles in milliseconds. Nothing runs here: user code only ever executes in
 * the sandbox (../sandbox/).
 */
import { createHash } from "node:crypto";
import type { Diagnostic } from "../../../contracts";
import { typecheckExperiment } from "./typecheck";
import { bundleExperiment } from "./bundle";

export interface CompiledExperiment {
  /** IIFE script: the user's modules, the SDK runtime and zod; it installs the sandbox entry points. */
  js: string;
  /** sha256 (hex) of the script: the identity of the code that runs. */
  hash: string;
}

/**
 * `bundled`, on a failure: the script esbuild still made when only type checking failed (esbuild strips types),
 * so a check can go on to look inside it (task rows against taskSchema) and report those problems together
 * with the type errors (validate.ts). Never run as a run: a run needs `ok`.
 */
export type CompileResult = { ok: true; compiled: CompiledExperiment } | { ok: false; diagnostics: Diagnostic[]; bundled?: CompiledExperiment };

/**
 * The last few successful compiles, by the files' content. Compiling is a pure function of the files (the
 * SDK runtime and zod are fixed for the process's life), and its result is two immutable strings, so a hit
 * is exactly what a fresh compile returns and nothing is shared between runs that one could change. It is
 * what keeps dispatch cheap: the web server validates a start before queueing it and the runner's start then
 * checks the same files again — the bundle (~200 ms warm) was most of that second check. Inspection (the
 * sandbox loading the bundle, every task row against taskSchema) still runs on every start. A Map in
 * insertion order is the LRU; 16 entries of a few hundred kB each bound it.
 */
const COMPILED = new Map<string, CompiledExperiment>();
const COMPILED_MAX = 16;

function filesKey(files: Record<string, string>): string {
  const h = createHash("sha256");
  for (const name of Object.keys(files).sort()) h.update(name).update("\0").update(files[name] ?? "").update("\0");
  return h.digest("hex");
}

export async function compileExperiment(files: Record<string, string>): Promise<CompileResult> {
  const key = filesKey(files);
  const hit = COMPILED.get(key);
  if (hit) {
    COMPILED.delete(key);
    COMPILED.set(key, hit); // most recently used last
    return { ok: true, compiled: hit };
  }
  const result = await compileUncached(files);
  if (result.ok) {
    COMPILED.set(key, result.compiled);
    while (COMPILED.size > COMPILED_MAX) COMPILED.delete(COMPILED.keys().next().value!);
  }
  return result;
}

async function compileUncached(files: Record<string, string>): Promise<CompileResult> {
  const diagnostics = typecheckExperiment(files);
  const typeErrors = diagnostics.some((d) => d.severity === "error");
  const bundle = await bundleExperiment(files);
  // Type errors first: esbuild's own errors (a bad import) are usually the same problems, said again.
  if (!bundle.ok) return { ok: false, diagnostics: typeErrors ? diagnostics : bundle.diagnostics };
  // The inline source map changes with comments and whitespace; the identity is the code alone.
  const code = bundle.js.replace(/\n\/\/# sourceMappingURL=.*\s*$/, "");
  const compiled = { js: bundle.js, hash: createHash("sha256").update(code).digest("hex") };
  return typeErrors ? { ok: false, diagnostics, bundled: compiled } : { ok: true, compiled };
}
