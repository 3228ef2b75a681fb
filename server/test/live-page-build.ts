/** Bundles server/test/live-page.ts (esbuild, as a browser module) into `dir` beside the live.html that loads it. */
import fs from "node:fs";
import path from "node:path";
import * as esbuild from "esbuild";

export async function buildLivePage(dir: string): Promise<void> {
  await esbuild.build({
    entryPoints: [path.join(import.meta.dirname, "live-page.ts")],
    bundle: true,
    format: "esm",
    platform: "browser",
    outfile: path.join(dir, "live.js"),
    logLevel: "silent",
  });
  fs.writeFileSync(
    path.join(dir, "live.html"),
    `<!doctype html><meta charset="utf-8"><title>live</title><p id="status"></p><ol id="rollouts"></ol><script type="module" src="/static/live.js"></script>`,
  );
}

/**
 * Bundles server/test/run-page.ts (the run page's header, for the pages chaos test) into `dir` beside run.html.
 * RUN_PAGE_ENTRY names another entry instead: how the test was run against the page's logic from before a change.
 */
export async function buildRunPage(dir: string): Promise<void> {
  await esbuild.build({
    entryPoints: [process.env.RUN_PAGE_ENTRY ?? path.join(import.meta.dirname, "run-page.ts")],
    bundle: true,
    format: "esm",
    platform: "browser",
    outfile: path.join(dir, "run.js"),
    logLevel: "silent",
  });
  fs.writeFileSync(
    path.join(dir, "run.html"),
    `<!doctype html><meta charset="utf-8"><title>run</title><p>status <b id="status"></b> · <span id="delivery"></span></p>` +
      `<button id="stop" hidden>Stop</button><button id="resume" hidden>Resume</button><script type="module" src="/static/run.js"></script>`,
  );
}
