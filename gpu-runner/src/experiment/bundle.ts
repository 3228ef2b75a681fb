/**
 * Bundles an experiment into one classic script for the sandbox. An isolate runs scripts, not ES modules,
 * so esbuild bundles a generated entry — it imports scenario.ts and reward.ts (and, through them, lib/ files,
 * the SDK runtime and zod) and installs the entry points the runner calls — as an IIFE. One bundle means one
 * instance of every module, shared by scenario and reward. Imports are resolved only from the experiment's
 * files in memory, the SDK runtime (gpu-runner/sdk/runtime) and zod; anything else fails the build (the type
 * check reports it first, with a friendlier message; this is the backstop). The source map is inlined so the
 * sandbox maps stack traces back to the user's files and lines.
 */
import path from "node:path";
import * as esbuild from "esbuild";
import type { Diagnostic } from "../../../contracts";
import { REPO_ROOT } from "../env";
import { classifyImport, importNotAllowed } from "./imports";

const NS = "experiment";
const ENTRY = "<rollbook-entry>";
const RUNTIME_DIR = path.join(REPO_ROOT, "gpu-runner/sdk/runtime");
export const SDK_RUNTIME_INDEX = path.join(RUNTIME_DIR, "index.ts");
const SDK_RUNTIME_ENTRY = path.join(RUNTIME_DIR, "entry.ts");

/** Caps the in-sandbox entry points apply (the runner checks them again). */
export const ENTRY_CAPS = { maxMetrics: 64, maxTaskErrors: 50 } as const;

function entrySource(): string {
  return [
    `import * as scenario from "./scenario.ts";`,
    `import * as reward from "./reward.ts";`,
    `import { installEntryPoints } from ${JSON.stringify(SDK_RUNTIME_ENTRY)};`,
    `installEntryPoints({ scenario, reward }, ${JSON.stringify(ENTRY_CAPS)});`,
  ].join("\n");
}

function userFilesPlugin(files: Record<string, string>): esbuild.Plugin {
  return {
    name: "rollbook-user-files",
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind === "entry-point") return { path: ENTRY, namespace: NS };
        // Inside the SDK runtime and zod, ordinary resolution from disk.
        if (args.namespace !== NS) return undefined;
        if (args.importer === ENTRY) {
          if (args.path === SDK_RUNTIME_ENTRY) return { path: SDK_RUNTIME_ENTRY };
          return { path: args.path.replace(/^\.\//, ""), namespace: NS };
        }
        const target = classifyImport(args.importer, args.path, files);
        if (!target) return { errors: [{ text: importNotAllowed(args.path) }] };
        if (target.kind === "file") return { path: target.path, namespace: NS };
        if (target.name === "rollbook") return { path: SDK_RUNTIME_INDEX };
        // zod: resolved as the runtime resolves it, so user code and the SDK share one instance.
        const resolved = await build.resolve(target.name, { kind: args.kind, resolveDir: RUNTIME_DIR });
        if (resolved.errors.length > 0) return { errors: resolved.errors };
        return { path: resolved.path };
      });
      build.onLoad({ filter: /.*/, namespace: NS }, (args) => {
        if (args.path === ENTRY) return { contents: entrySource(), loader: "ts" };
        const text = files[args.path];
        if (text === undefined) return { errors: [{ text: `no file ${args.path} in this experiment` }] };
        return { contents: text, loader: "ts" };
      });
    },
  };
}

export type BundleResult = { ok: true; js: string } | { ok: false; diagnostics: Diagnostic[] };

/** The global the IIFE assigns (unused: installEntryPoints defines the entry points itself). */
export const BUNDLE_GLOBAL = "__rollbook_bundle";

export async function bundleExperiment(files: Record<string, string>): Promise<BundleResult> {
  try {
    const result = await esbuild.build({
      entryPoints: [ENTRY],
      bundle: true,
      write: false,
      format: "iife",
      globalName: BUNDLE_GLOBAL,
      platform: "neutral",
      mainFields: ["module", "main"],
      target: "es2022",
      absWorkingDir: REPO_ROOT,
      sourcemap: "inline",
      sourcesContent: false,
      minify: false,
      // Bundling renames clashing top-level names (check → check2); keepNames restores each function's
      // `name`, which is what V8 prints in stack traces.
      keepNames: true,
      logLevel: "silent",
      plugins: [userFilesPlugin(files)],
    });
    const out = result.outputFiles?.[0];
    if (!out) return { ok: false, diagnostics: [{ file: "scenario.ts", line: 1, column: 1, message: "bundling produced no output", severity: "error" }] };
    return { ok: true, js: out.text };
  } catch (err) {
    const failure = err as esbuild.BuildFailure;
    if (!Array.isArray(failure.errors)) throw err;
    return { ok: false, diagnostics: failure.errors.map(toDiagnostic) };
  }
}

function toDiagnostic(m: esbuild.Message): Diagnostic {
  const loc = m.location;
  const file = loc?.file ? loc.file.replace(`${NS}:`, "") : "scenario.ts";
  return { file, line: loc ? Math.max(1, loc.line) : 1, column: loc ? loc.column + 1 : 1, message: m.text, severity: "error" };
}
