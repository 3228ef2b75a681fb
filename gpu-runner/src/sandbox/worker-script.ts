/**
 * The sandbox process's code as one ES module text, bundled once per runner process with esbuild from
 * worker/main.ts. A bundle starts in ~0.2 s where loading the TypeScript through tsx takes ~1 s, and
 * a run starts a sandbox process per concurrent rollout. isolated-vm (a native addon) stays outside the
 * bundle, imported by absolute path. The text is piped to `node -` (pool.ts): nothing is written to disk,
 * so there is no file another user of the machine could swap.
 */
import { createRequire } from "node:module";
import path from "node:path";
import * as esbuild from "esbuild";

let built: Promise<string> | undefined;

export function sandboxWorkerScript(): Promise<string> {
  built ??= build().catch((err: unknown) => {
    built = undefined; // let a later attempt try again
    throw err;
  });
  return built;
}

async function build(): Promise<string> {
  const ivmPath = createRequire(import.meta.url).resolve("isolated-vm");
  const result = await esbuild.build({
    entryPoints: [path.join(import.meta.dirname, "worker/main.ts")],
    bundle: true,
    write: false,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "silent",
    plugins: [
      {
        name: "isolated-vm-by-path",
        setup(b) {
          b.onResolve({ filter: /^isolated-vm$/ }, () => ({ path: ivmPath, external: true }));
        },
      },
    ],
  });
  const text = result.outputFiles[0]?.text;
  if (!text) throw new Error("bundling the sandbox process produced no output");
  return text;
}
