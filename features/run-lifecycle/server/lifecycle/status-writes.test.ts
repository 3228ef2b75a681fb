/**
 * Keeps the run lifecycle the one owner of a run's status, and the web tier free of import circles, by
 * reading the code itself with the TypeScript compiler's own parser and module resolution (written here
 * rather than with a lint plugin: the rule is about our Prisma model and our folder, which no plugin knows):
 *   - outside features/run-lifecycle/server/lifecycle/, no Prisma call on `run` (update, updateMany, upsert, create,
 *     createMany) writes `status` or `attempt`, and no raw SQL updates the Run table's status;
 *   - no module of server/ imports itself back through others (the dispatcher ↔ runs ↔ runs-table circle).
 */
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../../../..");
const LIFECYCLE = path.join(ROOT, "features/run-lifecycle/server/lifecycle");

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) return d.name === "node_modules" ? [] : sourceFiles(p);
    return /\.tsx?$/.test(d.name) && !/\.(test|servertest)\.ts$/.test(d.name) ? [p] : [];
  });
}

/** The web tier: the platform, the feature slices, the shared UI and the contracts. */
const WEB_DIRS = ["server", "features", "components", "contracts"];

const WRITES = new Set(["update", "updateMany", "upsert", "create", "createMany"]);

/** `status`/`attempt` keys written to the Run table by Prisma calls or raw SQL in one file, as "line: text". */
function statusWrites(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const where = (n: ts.Node) => `${path.relative(ROOT, file)}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}`;
  const writesStatus = (obj: ts.Expression | undefined): boolean =>
    !!obj && ts.isObjectLiteralExpression(obj) && obj.properties.some((p) => p.name && ts.isIdentifier(p.name) && (p.name.text === "status" || p.name.text === "attempt"));
  const visit = (n: ts.Node) => {
    if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && WRITES.has(n.expression.name.text)) {
      const target = n.expression.expression;
      if (ts.isPropertyAccessExpression(target) && target.name.text === "run") {
        const arg = n.arguments[0];
        if (arg && ts.isObjectLiteralExpression(arg)) {
          for (const p of arg.properties) {
            if (!ts.isPropertyAssignment(p) || !ts.isIdentifier(p.name)) continue;
            if (["data", "create", "update"].includes(p.name.text) && writesStatus(p.initializer)) found.push(`${where(p)} run.${n.expression.name.text} writes status/attempt`);
          }
        }
      }
    }
    if (ts.isTaggedTemplateExpression(n) || ts.isNoSubstitutionTemplateLiteral(n) || ts.isTemplateExpression(n)) {
      const sql = n.getText();
      if (/UPDATE\s+"Run"[\s\S]*\b(status|attempt)"?\s*=/i.test(sql)) found.push(`${where(n)} raw SQL updates Run.status`);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found;
}

describe("the run lifecycle owns every status write", () => {
  it("finds the writes it looks for (the lifecycle's own)", () => {
    expect(sourceFiles(LIFECYCLE).flatMap(statusWrites).length).toBeGreaterThanOrEqual(3);
  });

  it("no status or attempt is written outside features/run-lifecycle/server/lifecycle/", () => {
    // server/test/ holds fixtures that make rows in a given state for tests: not the product's writes.
    const fixtures = path.join(ROOT, "server/test") + path.sep;
    const outside = WEB_DIRS.flatMap((d) => sourceFiles(path.join(ROOT, d))).filter((f) => !f.startsWith(LIFECYCLE + path.sep) && !f.startsWith(fixtures));
    expect(outside.flatMap(statusWrites)).toEqual([]);
  });
});

/** The web tier's modules and what each imports (resolved like tsc does, through tsconfig's paths). */
function importGraph(): Map<string, string[]> {
  const config = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, "tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
  if (!config) throw new Error("tsconfig.json did not parse");
  const host = ts.createCompilerHost(config.options);
  const graph = new Map<string, string[]>();
  const webDirs = WEB_DIRS.map((d) => path.join(ROOT, d) + path.sep);
  for (const file of WEB_DIRS.flatMap((d) => sourceFiles(path.join(ROOT, d)))) {
    const sf = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
    const deps: string[] = [];
    for (const st of sf.statements) {
      const spec = (ts.isImportDeclaration(st) || ts.isExportDeclaration(st)) && st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier) ? st.moduleSpecifier.text : null;
      if (!spec) continue;
      const resolved = ts.resolveModuleName(spec, file, config.options, host).resolvedModule?.resolvedFileName;
      if (resolved && webDirs.some((d) => resolved.startsWith(d)) && !resolved.endsWith(".d.ts")) deps.push(path.resolve(resolved));
    }
    graph.set(path.resolve(file), deps);
  }
  return graph;
}

/** Every cycle reachable in the graph, each once, as relative paths. */
function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "visiting" | "done">();
  const stack: string[] = [];
  const visit = (n: string) => {
    state.set(n, "visiting");
    stack.push(n);
    for (const d of graph.get(n) ?? []) {
      if (state.get(d) === "visiting") found.push(stack.slice(stack.indexOf(d)).map((f) => path.relative(ROOT, f)));
      else if (!state.has(d)) visit(d);
    }
    stack.pop();
    state.set(n, "done");
  };
  for (const n of graph.keys()) if (!state.has(n)) visit(n);
  return found;
}

describe("the web tier's imports", () => {
  it("finds a circle when there is one", () => {
    expect(cycles(new Map([["a", ["b"]], ["b", ["a"]]]))).toHaveLength(1);
  });

  it("server/, features/, components/ and contracts/ have no import circle", () => {
    expect(cycles(importGraph())).toEqual([]);
  });
});
