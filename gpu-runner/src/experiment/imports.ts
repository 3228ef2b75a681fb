/**
 * Import policy for user code. Scenario and reward files run in a bare V8 isolate, so the only imports
 * that make sense are the SDK's types ("rollbook", an empty module at run time) and each other
 * (reward.ts commonly does `import type { Task } from "./scenario"`). Everything else (node:fs, npm
 * packages, URLs) is refused at compile time with a diagnostic at the import, rather than failing later.
 */
import ts from "typescript";
import type { Diagnostic } from "../../contracts";

export const USER_FILES = ["scenario.ts", "reward.ts"] as const;
export type UserFileName = (typeof USER_FILES)[number];

/** The user file an import specifier names, "rollbook", or null when it is not allowed. */
export function classifyImport(specifier: string): UserFileName | "rollbook" | null {
  if (specifier === "rollbook") return "rollbook";
  const m = /^\.\/(scenario|reward)(\.ts|\.js)?$/.exec(specifier);
  return m ? (`${m[1]}.ts` as UserFileName) : null;
}

export function importNotAllowed(specifier: string): string {
  return (
    `cannot import "${specifier}": user code runs in a sandbox without modules; ` +
    `only types from "rollbook" and "./scenario" / "./reward" can be imported`
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
export function checkImports(file: UserFileName, sf: ts.SourceFile): Diagnostic[] {
  return findImports(sf)
    .filter((s) => classifyImport(s.specifier) === null)
    .map((s) => {
      const pos = sf.getLineAndCharacterOfPosition(s.start);
      return {
        file,
        line: pos.line + 1,
        column: pos.character + 1,
        message: importNotAllowed(s.specifier),
        severity: "error" as const,
      };
    });
}
