/**
 * Type checks scenario.ts and reward.ts together, in memory, against the ES2022 library and the SDK's
 * rollbook.d.ts only (plus the sandbox's `console`): no DOM and no Node types, because neither exists in the sandbox. Library and SDK
 * source files are parsed once per process and reused (TypeScript also keeps their binding on the
 * SourceFile), which takes a warm check from ~1 s down to a small fraction of it.
 */
import path from "node:path";
import { readFileSync } from "node:fs";
import ts from "typescript";
import type { Diagnostic } from "../../contracts";
import { SANDBOX_GLOBALS_DTS, SDK_DTS } from "./sdk";
import { USER_FILES, type UserFileName, checkImports, classifyImport, findImports } from "./imports";

const ROOT = "/experiment/";
const SDK_PATH = `${ROOT}rollbook.d.ts`;
const GLOBALS_PATH = `${ROOT}sandbox-globals.d.ts`;
const LIB_DIR = path.dirname(ts.getDefaultLibFilePath({}));

/** What user code is checked with: strict, as the SDK examples are written; no emit (esbuild bundles). */
export const USER_COMPILER_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  lib: ["lib.es2022.d.ts"],
  types: [],
  strict: true,
  noEmit: true,
  isolatedModules: true,
  allowImportingTsExtensions: true,
  skipLibCheck: true,
  noFallthroughCasesInSwitch: true,
};

/** Parsed library/SDK files, shared by every check in this process (they never change). */
const staticFiles = new Map<string, ts.SourceFile>();
/** The last parse of each user file, reused while its text is unchanged (the editor re-checks often). */
const userFiles = new Map<string, ts.SourceFile>();
let lastProgram: ts.Program | undefined;

function staticSourceFile(fileName: string): ts.SourceFile | undefined {
  const cached = staticFiles.get(fileName);
  if (cached) return cached;
  let text: string;
  if (fileName === SDK_PATH) text = SDK_DTS;
  else if (fileName === GLOBALS_PATH) text = SANDBOX_GLOBALS_DTS;
  else if (path.dirname(fileName) === LIB_DIR) {
    try {
      text = readFileSync(fileName, "utf8");
    } catch {
      return undefined;
    }
  } else return undefined;
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2022, false);
  staticFiles.set(fileName, sf);
  return sf;
}

function userSourceFile(fileName: string, text: string): ts.SourceFile {
  const cached = userFiles.get(fileName);
  if (cached && cached.text === text) return cached;
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  userFiles.set(fileName, sf);
  return sf;
}

function createHost(files: Record<UserFileName, string>): ts.CompilerHost {
  const user = (fileName: string): UserFileName | undefined =>
    USER_FILES.find((f) => `${ROOT}${f}` === fileName);
  return {
    getSourceFile: (fileName) => {
      const u = user(fileName);
      return u ? userSourceFile(fileName, files[u]) : staticSourceFile(fileName);
    },
    getDefaultLibFileName: (options) => ts.getDefaultLibFilePath(options),
    getDefaultLibLocation: () => LIB_DIR,
    writeFile: () => {},
    getCurrentDirectory: () => ROOT,
    getCanonicalFileName: (f) => f,
    useCaseSensitiveFileNames: () => true,
    getNewLine: () => "\n",
    fileExists: (f) => user(f) !== undefined || staticSourceFile(f) !== undefined,
    readFile: (f) => {
      const u = user(f);
      return u ? files[u] : staticSourceFile(f)?.text;
    },
    // Only the two user files resolve; "rollbook" is the SDK's ambient module, and anything else is
    // reported by checkImports. Nothing is looked up on disk, so node_modules types never leak in.
    resolveModuleNameLiterals: (literals) =>
      literals.map((lit) => {
        const target = classifyImport(lit.text);
        if (target === null || target === "rollbook") return { resolvedModule: undefined };
        return {
          resolvedModule: { resolvedFileName: `${ROOT}${target}`, extension: ts.Extension.Ts, isExternalLibraryImport: false },
        };
      }),
  };
}

function toDiagnostic(d: ts.Diagnostic): Diagnostic | null {
  if (d.category !== ts.DiagnosticCategory.Error && d.category !== ts.DiagnosticCategory.Warning) return null;
  const message = ts.flattenDiagnosticMessageText(d.messageText, "\n");
  const severity = d.category === ts.DiagnosticCategory.Error ? "error" : "warning";
  if (!d.file || d.start === undefined) return { file: "scenario.ts", line: 1, column: 1, message, severity };
  const pos = d.file.getLineAndCharacterOfPosition(d.start);
  const file = d.file.fileName.startsWith(ROOT) ? d.file.fileName.slice(ROOT.length) : d.file.fileName;
  return { file, line: pos.line + 1, column: pos.character + 1, message, severity };
}

/** TS's own "Cannot find module" errors, which checkImports replaces with a clearer message. */
const CANNOT_FIND_MODULE = new Set([2307, 2792]);

function hasDefaultExport(checker: ts.TypeChecker, sf: ts.SourceFile): boolean {
  const moduleSymbol = checker.getSymbolAtLocation(sf);
  if (!moduleSymbol) return false;
  return checker.getExportsOfModule(moduleSymbol).some((s) => s.escapedName === "default");
}

const MISSING_DEFAULT: Record<UserFileName, string> = {
  "scenario.ts": "scenario.ts needs a default export: `export default async function rollout(ctx: RolloutContext<Task>) { ... }`",
  "reward.ts": "reward.ts needs a default export: `export default function reward({ task, output, messages }: RewardInput<Task, Output>): RewardResult { ... }`",
};

/**
 * Syntax errors first (when a file does not parse, its type errors are noise), then import policy,
 * type errors and the default-export requirement. Positions are 1-based in the user's own file.
 */
export function typecheckExperiment(files: Record<UserFileName, string>): Diagnostic[] {
  const program = ts.createProgram({
    rootNames: [SDK_PATH, GLOBALS_PATH, ...USER_FILES.map((f) => `${ROOT}${f}`)],
    options: USER_COMPILER_OPTIONS,
    host: createHost(files),
    oldProgram: lastProgram,
  });
  lastProgram = program;
  const sources = USER_FILES.map((name) => {
    const sf = program.getSourceFile(`${ROOT}${name}`);
    if (!sf) throw new Error(`internal: ${name} missing from the program`);
    return { name, sf };
  });

  const out: Diagnostic[] = [];
  const push = (ds: readonly ts.Diagnostic[]) => {
    for (const d of ds) {
      const diag = toDiagnostic(d);
      if (diag) out.push(diag);
    }
  };

  for (const { sf } of sources) push(program.getSyntacticDiagnostics(sf));
  if (out.length > 0) return sortDiagnostics(out);

  const badImportStarts = new Map<ts.SourceFile, Set<number>>();
  for (const { name, sf } of sources) {
    out.push(...checkImports(name, sf));
    badImportStarts.set(
      sf,
      new Set(findImports(sf).filter((s) => classifyImport(s.specifier) === null).map((s) => s.start)),
    );
  }
  push(program.getOptionsDiagnostics());
  push(program.getGlobalDiagnostics());
  for (const { sf } of sources) {
    const semantic = program
      .getSemanticDiagnostics(sf)
      .filter((d) => !(CANNOT_FIND_MODULE.has(d.code) && d.start !== undefined && badImportStarts.get(sf)?.has(d.start)));
    push(semantic);
  }
  const checker = program.getTypeChecker();
  for (const { name, sf } of sources) {
    if (!hasDefaultExport(checker, sf)) out.push({ file: name, line: 1, column: 1, message: MISSING_DEFAULT[name], severity: "error" });
  }
  return sortDiagnostics(out);
}

function sortDiagnostics(ds: Diagnostic[]): Diagnostic[] {
  // scenario.ts before reward.ts (the order the editor shows the tabs), then by position.
  const rank = (f: string) => {
    const i = (USER_FILES as readonly string[]).indexOf(f);
    return i < 0 ? USER_FILES.length : i;
  };
  return ds.sort((a, b) => rank(a.file) - rank(b.file) || a.line - b.line || a.column - b.column);
}
