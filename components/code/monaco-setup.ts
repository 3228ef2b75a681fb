"use client";
/**
 * Monaco, self-hosted: the editor and its language workers come from node_modules through the bundler,
 * never from a CDN (@monaco-editor/react's default), so the notebook works offline. Import this module
 * only from client-only code (next/dynamic with ssr: false): monaco touches `window` when loaded.
 */
import { loader } from "@monaco-editor/react";
import * as monaco from "monaco-editor";
import { z } from "zod";
import { PASTED_MCP_SERVERS_JSON_SCHEMA, RunConfig, USER_CODE_COMPILER_FLAGS } from "@contracts";

export interface TypeLib {
  path: string;
  text: string;
}

// Monaco's typings list only the enum members of an older TypeScript; its worker runs TypeScript 5.9,
// which knows these values (the runner's gpu-runner/src/experiment/typecheck.ts uses the same ones).
const ES2022 = 9 as monaco.typescript.ScriptTarget;
const BUNDLER_RESOLUTION = 100 as monaco.typescript.ModuleResolutionKind;

let configured = false;
let loadedLibs: readonly TypeLib[] | null = null;

export function setupMonaco(): typeof monaco {
  if (configured) return monaco;
  configured = true;
  self.MonacoEnvironment = {
    getWorker(_workerId: string, label: string) {
      // Each `new Worker(new URL(..., import.meta.url))` is written out in full so the bundler sees it.
      if (label === "typescript" || label === "javascript") {
        return new Worker(new URL("monaco-editor/language/typescript/ts.worker.js", import.meta.url), { type: "module" });
      }
      if (label === "json") {
        return new Worker(new URL("monaco-editor/language/json/json.worker.js", import.meta.url), { type: "module" });
      }
      return new Worker(new URL("monaco-editor/editor/editor.worker.js", import.meta.url), { type: "module" });
    },
  };
  loader.config({ monaco });

  const ts = monaco.typescript;
  // The runner's flags (USER_CODE_COMPILER_FLAGS, shared): what passes here passes there.
  ts.typescriptDefaults.setCompilerOptions({
    target: ES2022,
    module: ts.ModuleKind.ESNext,
    // Bundler resolution finds `./lib/calc` among the models (file:///lib/calc.ts), and "rollbook" and
    // "zod" among the type libs (file:///node_modules/rollbook/index.d.ts, …): each declaration exists
    // once, as a module, so no SDK call shows as "overload 1 of 2".
    moduleResolution: BUNDLER_RESOLUTION,
    // The sandbox has no DOM and no Node: only the language itself, plus sandbox-globals.d.ts (console).
    lib: ["es2022"],
    ...USER_CODE_COMPILER_FLAGS,
    types: [...USER_CODE_COMPILER_FLAGS.types],
    allowNonTsExtensions: true,
  });
  // Sync every model to the worker, not only the visible one, so reward.ts sees scenario.ts's types and
  // every file gets its diagnostics (the file list counts them).
  ts.typescriptDefaults.setEagerModelSync(true);

  // config.json: completions, hovers and validation from the same zod schema the runner checks.
  try {
    const schema = z.toJSONSchema(RunConfig, { io: "input", unrepresentable: "any" });
    // The parser also takes the editors' `mcpServers` (folded into mcp.servers); the schema must not flag it.
    schema.properties = { ...schema.properties, mcpServers: PASTED_MCP_SERVERS_JSON_SCHEMA };
    monaco.json.jsonDefaults.setDiagnosticsOptions({
      validate: true,
      allowComments: false,
      schemas: [{ uri: "rollbook://schemas/run-config.json", fileMatch: ["config.json"], schema }],
    });
  } catch {
    // A schema that cannot be expressed just means no config completions; the server still validates.
  }

  monaco.editor.defineTheme("rollbook-dark", {
    base: "vs-dark",
    inherit: true,
    rules: [],
    colors: {
      "editor.background": "#0c0c0f",
      "editorGutter.background": "#0c0c0f",
      "editor.lineHighlightBackground": "#18181b",
    },
  });
  return monaco;
}

/**
 * The SDK's type libs (GET /api/type-libs), each at file:///<path>. setExtraLibs replaces the whole set,
 * so loading twice (a remount, a newer server) never leaves a second copy of a declaration behind.
 */
export function setTypeLibs(libs: readonly TypeLib[]): void {
  if (loadedLibs === libs) return;
  loadedLibs = libs;
  monaco.typescript.typescriptDefaults.setExtraLibs(libs.map((l) => ({ content: l.text, filePath: `file:///${l.path}` })));
}

export { monaco };
