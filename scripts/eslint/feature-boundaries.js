/**
 * The web tier's house rules, checked on every import (`npm run check`):
 *  1. browser code (components/, features/<f>/components/, a feature's browser-safe root files) never imports
 *     a server path (server/, features/<f>/server/), except `import type` (the tRPC AppRouter type);
 *  2. a feature reaches another only through its entry files: features/<f>/index.ts (browser-safe UI),
 *     schema.ts (browser-safe schemas and types) or server/index.ts (server services); the platform's root
 *     router (server/routers/_app.ts) also mounts each feature's *router.ts;
 *  3. a feature never imports its own entry files (the barrel would close an import circle);
 *  4. server code never imports UI (components/, features/<f>/components/): what both need is a schema.
 * Tests (and the test harness) may reach any file: they test internals.
 *
 * Written here rather than with eslint-plugin-boundaries: its v7 policy syntax is mid-migration (the rule
 * names it documents warn as deprecated), and these three checks are a path comparison each.
 */
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "../..");
const TEST = /\.(test|servertest|typetest)\.tsx?$|^server\/(test|chaos|security)\//;
const ENTRY = /^features\/([^/]+)(\/index|\/schema|\/server|\/server\/index)?(\.tsx?)?$/;
const ROUTER = /^features\/[^/]+\/server\/[a-z-]*router(\.ts)?$/;

function target(file, spec) {
  if (spec.startsWith("@/")) return spec.slice(2);
  if (spec === "@contracts" || spec.startsWith("@contracts/")) return "contracts" + spec.slice(10);
  if (spec.startsWith(".")) return path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
  return null;
}
const featureOf = (p) => (p.match(/^features\/([^/]+)\//) || p.match(/^features\/([^/]+)$/) || [])[1] ?? null;
const isServerPath = (p) => p.startsWith("server/") || /^features\/[^/]+\/server(\/|$)/.test(p);
const isUiPath = (p) => p.startsWith("components/") || /^features\/[^/]+\/components\//.test(p);
const isBrowserFile = (f) =>
  f.startsWith("components/") || /^features\/[^/]+\/components\//.test(f) || /^features\/[^/]+\/[^/]+\.tsx?$/.test(f);

export default {
  meta: { type: "problem", docs: { description: "feature slices: browser/server split and entry files" }, schema: [] },
  create(context) {
    const file = path.relative(ROOT, context.filename).split(path.sep).join("/");
    if (TEST.test(file)) return {};
    const check = (node, source, typeOnly) => {
      if (!source || typeof source.value !== "string") return;
      const t = target(file, source.value);
      if (!t) return;
      if (isBrowserFile(file) && isServerPath(t) && !typeOnly) {
        context.report({ node, message: `${file} runs in the browser: it may not import the server path '${source.value}' (move what both need to a schema.ts or contracts/).` });
        return;
      }
      if (isServerPath(file) && isUiPath(t)) {
        context.report({ node, message: `${file} is server code: it may not import the UI module '${source.value}' (move what both need to a schema.ts or contracts/).` });
        return;
      }
      const to = featureOf(t), from = featureOf(file);
      if (!to) return;
      const entry = ENTRY.test(t);
      if (from === to) {
        if (entry && /\/(index|server|server\/index)(\.tsx?)?$|^features\/[^/]+$/.test(t))
          context.report({ node, message: `import files of your own feature directly, not through its entry '${source.value}' (an import circle).` });
        return;
      }
      if (file.startsWith("app/")) return; // pages and route handlers compose the features
      if (entry || (file === "server/routers/_app.ts" && ROUTER.test(t))) return;
      context.report({ node, message: `'${source.value}' is inside the feature '${to}': import it through features/${to}/index.ts, schema.ts or server/index.ts.` });
    };
    return {
      ImportDeclaration: (n) => check(n, n.source, n.importKind === "type"),
      ExportNamedDeclaration: (n) => check(n, n.source, n.exportKind === "type"),
      ExportAllDeclaration: (n) => check(n, n.source, n.exportKind === "type"),
      ImportExpression: (n) => check(n, n.source, false),
    };
  },
};
