/**
 * The type declarations user code is checked against, as virtual files: the SDK (this folder's
 * rollbook.d.ts, as the module "rollbook"), the sandbox's few globals (console), and zod's own .d.ts files
 * (the closure of what `import { z } from "zod"` reaches). The runner's type check and the browser's Monaco
 * load exactly this list, so the editor and the runner agree on every type.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import ts from "typescript";

export interface TypeLib {
  /** Virtual path relative to the experiment root, e.g. `node_modules/rollbook/index.d.ts`. */
  path: string;
  text: string;
}

/**
 * Globals the sandbox defines besides the ES2022 built-ins: only `console`, whose methods all write to the
 * rollout's log like ctx.log (users reach for console.log by habit; it should work, not fail the type check).
 */
export const SANDBOX_GLOBALS_DTS = `declare var console: {
  /** Writes a line to the rollout's log, like ctx.log. */
  log(...args: unknown[]): void;
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
  debug(...args: unknown[]): void;
};
`;

export const SDK_DTS_PATH = "node_modules/rollbook/index.d.ts";
export const SANDBOX_GLOBALS_PATH = "sandbox-globals.d.ts";

/** The SDK's declarations: one module file, the single source of the SDK's types. */
export const SDK_DTS: string = readFileSync(new URL("./rollbook.d.ts", import.meta.url), "utf8");

/** zod's declaration files reachable from its index.d.ts, following relative imports. */
function zodLibs(): TypeLib[] {
  const zodIndex = createRequire(import.meta.url).resolve("zod/package.json").replace(/package\.json$/, "index.d.ts");
  const zodRoot = path.dirname(zodIndex);
  const seen = new Map<string, string>();
  const queue = [zodIndex];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    const text = readFileSync(file, "utf8");
    seen.set(file, text);
    for (const ref of ts.preProcessFile(text, true, true).importedFiles) {
      if (!ref.fileName.startsWith(".")) continue;
      const target = path.resolve(path.dirname(file), ref.fileName.replace(/\.js$/, ".d.ts"));
      const withExt = target.endsWith(".d.ts") ? target : `${target}.d.ts`;
      if (!seen.has(withExt)) queue.push(withExt);
    }
  }
  return [...seen].map(([file, text]) => ({ path: `node_modules/zod/${path.relative(zodRoot, file).split(path.sep).join("/")}`, text }));
}

let cached: TypeLib[] | undefined;

/** Every type lib, computed once per process. */
export function sdkTypeLibs(): TypeLib[] {
  cached ??= [{ path: SDK_DTS_PATH, text: SDK_DTS }, { path: SANDBOX_GLOBALS_PATH, text: SANDBOX_GLOBALS_DTS }, ...zodLibs()];
  return cached;
}
