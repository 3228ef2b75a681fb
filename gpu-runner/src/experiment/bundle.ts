/**
 * Bundles one user file into a single classic script for the sandbox. An isolate runs scripts, not ES
 * modules, so each file becomes an IIFE assigning its exports to a global (`globalName`); the default
 * export is then `<globalName>.default`. Imports are resolved only from memory: "rollbook" becomes an empty
 * module (it only carries types), "./scenario" / "./reward" are the other user file, and any other import
 * fails the build (the type check reports it first, with a friendlier message; this is the backstop).
 * The source map is inlined so the sandbox can map a stack trace back to the user's lines.
 */
import * as esbuild from "esbuild";
import type { Diagnostic } from "../../contracts";
import { type UserFileName, classifyImport, importNotAllowed } from "./imports";

const NS = "experiment";

function userFilesPlugin(files: Record<UserFileName, string>): esbuild.Plugin {
  return {
    name: "rollbook-user-files",
    setup(build) {
      build.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === "entry-point") return { path: args.path, namespace: NS };
        const target = classifyImport(args.path);
        if (target === "rollbook") return { path: "rollbook", namespace: NS };
        if (target) return { path: target, namespace: NS };
        return { errors: [{ text: importNotAllowed(args.path) }] };
      });
      build.onLoad({ filter: /.*/, namespace: NS }, (args) => {
        if (args.path === "rollbook") return { contents: "export {};", loader: "js" };
        const name = args.path as UserFileName;
        return { contents: files[name], loader: "ts" };
      });
    },
  };
}

export type BundleResult = { ok: true; js: string } | { ok: false; diagnostics: Diagnostic[] };

export async function bundleUserFile(
  entry: UserFileName,
  globalName: string,
  files: Record<UserFileName, string>,
): Promise<BundleResult> {
  try {
    const result = await esbuild.build({
      entryPoints: [entry],
      bundle: true,
      write: false,
      format: "iife",
      globalName,
      platform: "neutral",
      target: "es2022",
      sourcemap: "inline",
      sourcesContent: false,
      logLevel: "silent",
      plugins: [userFilesPlugin(files)],
    });
    const out = result.outputFiles[0];
    if (!out) throw new Error("esbuild produced no output");
    return { ok: true, js: out.text };
  } catch (err) {
    const failure = err as esbuild.BuildFailure;
    if (!Array.isArray(failure.errors)) throw err;
    return { ok: false, diagnostics: failure.errors.map((m) => toDiagnostic(entry, m)) };
  }
}

function toDiagnostic(entry: UserFileName, m: esbuild.Message): Diagnostic {
  const loc = m.location;
  const file = loc?.file ? loc.file.replace(`${NS}:`, "") : entry;
  return {
    file,
    line: loc ? Math.max(1, loc.line) : 1,
    column: loc ? loc.column + 1 : 1,
    message: m.text,
    severity: "error",
  };
}
