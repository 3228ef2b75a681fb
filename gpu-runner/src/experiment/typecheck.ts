/**
 * Type checks an experiment's TypeScript files together, in memory, against the ES2022 library and the
 * SDK's type libs only (rollbook, the sandbox's console, zod: contracts/sdk/type-libs.ts — the same list
 * Monaco loads): no DOM and no Node types, because neither exists in the sandbox. Everything lives in a
 * virtual file system under /experiment/; nothing is looked up on disk but TypeScript's own lib files.
 * Library and SDK source files are parsed once per process and reused (TypeScript also keeps their binding
 * on the SourceFile), which keeps a warm check well under a second.
 */
import path from "node:path";
import { readFileSync } from "node:fs";
import ts from "typescript";
import { codePaths, USER_CODE_COMPILER_FLAGS, type Diagnostic } from "../../../contracts";
import { sdkTypeLibs, SANDBOX_GLOBALS_PATH, SDK_DTS_PATH } from "../../../contracts/sdk/type-libs";
import { checkImports, classifyImport, findImports } from "./imports";

const ROOT = "/experiment/";
const LIB_DIR = path.dirname(ts.getDefaultLibFilePath({}));

/** What user code is checked with: strict, as the SDK examples are written; no emit (esbuild bundles). */
export const USER_COMPILER_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  lib: ["lib.es2022.d.ts"],
  ...USER_CODE_COMPILER_FLAGS,
  types: [...USER_CODE_COMPILER_FLAGS.types],
};

const typeLibs = new Map(sdkTypeLibs().map((l) => [`${ROOT}${l.path}`, l.text]));

/** Parsed library and SDK files, shared by every check in this process (they never change). */
const staticFiles = new Map<string, ts.SourceFile>();
/** The last parse of each user file, reused while its text is unchanged (the editor re-checks often). */
const userFiles = new Map<string, ts.SourceFile>();
let lastProgram: ts.Program | undefined;

function staticSourceFile(fileName: string): ts.SourceFile | undefined {
  const cached = staticFiles.get(fileName);
  if (cached) return cached;
  let text = typeLibs.get(fileName);
  if (text === undefined && path.dirname(fileName) === LIB_DIR) {
    try {
      text = readFileSync(fileName, "utf8");
    } catch {
      return undefined;
    }
  }
  if (text === undefined) return undefined;
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

function createHost(files: Record<string, string>, code: readonly string[]): ts.CompilerHost {
  const userPath = (fileName: string): string | undefined => {
    if (!fileName.startsWith(ROOT)) return undefined;
    const rel = fileName.slice(ROOT.length);
    return code.includes(rel) ? rel : undefined;
  };
  const fileExists = (f: string) => userPath(f) !== undefined || typeLibs.has(f) || (path.dirname(f) === LIB_DIR && ts.sys.fileExists(f));
  const readFile = (f: string) => {
    const u = userPath(f);
    return u !== undefined ? files[u] : (typeLibs.get(f) ?? staticSourceFile(f)?.text);
  };
  const moduleHost: ts.ModuleResolutionHost = { fileExists, readFile, directoryExists: () => true, getCurrentDirectory: () => ROOT };
  return {
    getSourceFile: (fileName) => {
      const u = userPath(fileName);
      return u !== undefined ? userSourceFile(fileName, files[u] ?? "") : staticSourceFile(fileName);
    },
    getDefaultLibFileName: (options) => ts.getDefaultLibFilePath(options),
    getDefaultLibLocation: () => LIB_DIR,
    writeFile: () => {},
    getCurrentDirectory: () => ROOT,
    getCanonicalFileName: (f) => f,
    useCaseSensitiveFileNames: () => true,
    getNewLine: () => "\n",
    fileExists,
    readFile,
    resolveModuleNameLiterals: (literals, containingFile) =>
      literals.map((lit) => {
        const from = userPath(containingFile);
        if (from !== undefined) {
          // User files: only what the import policy allows resolves; checkImports reports the rest.
          const target = classifyImport(from, lit.text, files);
          if (target === null) return { resolvedModule: undefined };
          if (target.kind === "file") {
            return { resolvedModule: { resolvedFileName: `${ROOT}${target.path}`, extension: ts.Extension.Ts, isExternalLibraryImport: false } };
          }
          if (target.name === "rollbook") {
            return { resolvedModule: { resolvedFileName: `${ROOT}${SDK_DTS_PATH}`, extension: ts.Extension.Dts, isExternalLibraryImport: true } };
          }
        }
        // zod, and imports inside the type libs: ordinary resolution over the virtual file system.
        return ts.resolveModuleName(lit.text, containingFile, USER_COMPILER_OPTIONS, moduleHost);
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

const MISSING_DEFAULT: Record<string, string> = {
  "scenario.ts": "scenario.ts needs a default export: `export default async function rollout(ctx: RolloutContext<Task>) { ... }`",
  "reward.ts": "reward.ts needs a default export: `export default function reward({ task, output, messages }: RewardInput<Task, Output>): RewardResult { ... }`",
};

/**
 * Syntax errors first (when a file does not parse, its type errors are noise), then import policy,
 * type errors and the default-export requirement. Positions are 1-based in the user's own file.
 */
export function typecheckExperiment(files: Record<string, string>): Diagnostic[] {
  const code = codePaths(files);
  const program = ts.createProgram({
    rootNames: [`${ROOT}${SDK_DTS_PATH}`, `${ROOT}${SANDBOX_GLOBALS_PATH}`, ...code.map((f) => `${ROOT}${f}`)],
    options: USER_COMPILER_OPTIONS,
    host: createHost(files, code),
    oldProgram: lastProgram,
  });
  lastProgram = program;
  const sources = code.map((name) => {
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
  if (out.length > 0) return sortDiagnostics(out, code);

  const badImportStarts = new Map<ts.SourceFile, Set<number>>();
  for (const { name, sf } of sources) {
    out.push(...checkImports(name, sf, files));
    badImportStarts.set(sf, new Set(findImports(sf).filter((s) => classifyImport(name, s.specifier, files) === null).map((s) => s.start)));
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
    const missing = MISSING_DEFAULT[name];
    if (missing && !hasDefaultExport(checker, sf)) out.push({ file: name, line: 1, column: 1, message: missing, severity: "error" });
  }
  return sortDiagnostics(out, code);
}

function sortDiagnostics(ds: Diagnostic[], code: readonly string[]): Diagnostic[] {
  // In the order the editor lists the files, then by position.
  const rank = (f: string) => {
    const i = code.indexOf(f);
    return i < 0 ? code.length : i;
  };
  return ds.sort((a, b) => rank(a.file) - rank(b.file) || a.line - b.line || a.column - b.column);
}
