"use client";
/**
 * Monaco, self-hosted: the editor and its language workers come from node_modules through the bundler,
 * never from a CDN (@monaco-editor/react's default), so the notebook works offline. Import this module
 * only from client-only code (next/dynamic with ssr: false): monaco touches `window` when loaded.
 */
import { loader } from "@monaco-editor/react";
import * as monaco from "monaco-editor";
import { z } from "zod";
import { RunConfig } from "@contracts";

/** Where the scenario SDK's types live for the TS worker; `import ... from "rollbook"` resolves to it. */
export const SDK_TYPES_URI = "file:///node_modules/@types/rollbook/index.d.ts";

let configured = false;
let sdkLoaded = false;

export function setupMonaco(sdkTypes: string): typeof monaco {
  if (!configured) {
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
    ts.typescriptDefaults.setCompilerOptions({
      target: ts.ScriptTarget.ES2020,
      module: ts.ModuleKind.ESNext,
      // NodeJs resolution finds `./scenario` among the open models (file:///scenario.ts) and the SDK's
      // ambient `declare module "rollbook"` in the extra lib.
      moduleResolution: ts.ModuleResolutionKind.NodeJs,
      strict: true,
      noEmit: true,
      allowNonTsExtensions: true,
      esModuleInterop: true,
      isolatedModules: true,
      // The sandbox has no DOM and no Node: only the language itself.
      lib: ["es2022"],
    });
    // Sync every model to the worker, not only the visible one, so reward.ts sees scenario.ts's types.
    ts.typescriptDefaults.setEagerModelSync(true);

    // config.json: completions, hovers and validation from the same zod schema the runner checks.
    try {
      const schema = z.toJSONSchema(RunConfig, { io: "input", unrepresentable: "any" });
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
  }
  if (!sdkLoaded && sdkTypes) {
    sdkLoaded = true;
    monaco.typescript.typescriptDefaults.addExtraLib(sdkTypes, SDK_TYPES_URI);
  }
  return monaco;
}

export { monaco };
