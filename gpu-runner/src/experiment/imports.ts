/**
 * Import policy for user code. An experiment's TypeScript files run in a bare V8 isolate, bundled into one
 * script, so an import can only be another file of the experiment (`./lib/tools`, `../scenario`), the SDK
 * ("rollbook") or zod (bundled, for tool parameters and task schemas). Everything else (node:fs, other npm
 * packages, URLs) is refused at compile time with a diagnostic at the import, rather than failing later.
 */
import ts from "typescript";
import { resolveRelativeImport, type Diagnostic } from "../../../contracts";

/** Packages user code may import, mapped to what the bundler and the type checker load for them. */
export const PACKAGE_IMPORTS = new Set(["rollbook", "zod", "zod/v4"]);

export type ImportTarget = { kind: "file"; path: string } | { kind: "package"; name: string };

/** What an import specifier in `fromPath` names, or null when it is not allowed. */
export function classifyImport(fromPath: string, specifier: string, files: Record<string, string>): ImportTarget | null {
  if (PACKAGE_IMPORTS.has(specifier)) return { kind: "package", name: specifier };
  const path = resolveRelativeImport(fromPath, specifier, files);
  return path ? { kind: "file", path } : null;
}

export function importNotAllowed(specifier: string): string {
  if (specifier.startsWith("./") || specifier.startsWith("../")) {
    return `cannot import "${specifier}": no such file in this experiment (files are scenario.ts, reward.ts and lib/<name>.ts)`;
  }
  return (
    `cannot import "${specifier}": user code runs in a sandbox without Node or npm modules; ` +
    `import "rollbook", "zod" or the experiment's own files ("./lib/<name>")`
  );
}

export interface ImportSite {
  specifier: string;
  /** Offset of the specifier's string literal in the file. */
  start: number;
}

/** Every module specifier in a file: static imports/exports, `import x = require()`, `import()`, `require()`. */
export function findImports(sf: ts.SourceFile): ImportSite[] {
  const sites: ImportSite[] = [];
  const add = (node: ts.Node | undefined) => {
    if (node && ts.isStringLiteralLike(node)) sites.push({ specifier: node.text, start: node.getStart(sf) });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) add(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node.moduleReference.expression);
    } else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const isImport = callee.kind === ts.SyntaxKind.ImportKeyword;
      const isRequire = ts.isIdentifier(callee) && callee.text === "require";
      if (isImport || isRequire) add(node.arguments[0]);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node.argument.literal);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return sites;
}

/** Diagnostics for the imports of one user file that the sandbox cannot satisfy. */
export function checkImports(file: string, sf: ts.SourceFile, files: Record<string, string>): Diagnostic[] {
  return findImports(sf)
    .filter((s) => classifyImport(file, s.specifier, files) === null)
    .map((s) => {
      const pos = sf.getLineAndCharacterOfPosition(s.start);
      return { file, line: pos.line + 1, column: pos.character + 1, message: importNotAllowed(s.specifier), severity: "error" as const };
    });
}
