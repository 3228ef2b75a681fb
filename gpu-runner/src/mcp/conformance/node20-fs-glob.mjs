// Loads @modelcontextprotocol/conformance on Node 20 (package.json's engines allow 20.19+): its bundle
// imports `globSync` from "fs" at load, which only Node 22 has, though only its tier-check command calls it.
// Run as `node --import ./node20-fs-glob.mjs …/conformance/dist/index.js`: where fs has no globSync, that
// package's imports of fs get fs plus a globSync that says why it is missing. Nothing else is touched.
import fs from "node:fs";
import { register } from "node:module";

if (!("globSync" in fs)) {
  const shim =
    "data:text/javascript," +
    encodeURIComponent(
      'import fs from "node:fs"; export * from "node:fs"; export default fs;' +
        ' export function globSync() { throw new Error("fs.globSync needs Node 22 (used by the conformance tier-check only)"); }',
    );
  const hooks =
    "data:text/javascript," +
    encodeURIComponent(
      `export async function resolve(specifier, context, next) {
        const fromSuite = context.parentURL?.includes("/node_modules/@modelcontextprotocol/conformance/") ?? false;
        if (fromSuite && (specifier === "fs" || specifier === "node:fs")) return { url: ${JSON.stringify(shim)}, shortCircuit: true };
        return next(specifier, context);
      }`,
    );
  register(hooks);
}
