/**
 * Naming helper files: what the user types in New file / Rename becomes a path under lib/, checked with
 * the contract's own rule (isExperimentPath) so the editor never accepts a name the server would refuse.
 * Each refusal names the rule that was broken.
 */
import { EXPERIMENT_MAX_FILES, isExperimentPath, isRequiredFile } from "@contracts";

/** A helper the user may rename or delete: any experiment path but the four required files. */
export const isHelperPath = (path: string) => isExperimentPath(path) && !isRequiredFile(path);

/**
 * "tools" → "lib/tools.ts", "game/board" → "lib/game/board.ts", "./lib/x.ts" → "lib/x.ts". A name with an
 * extension other than .ts keeps it, so the check can say why it is refused instead of silently adding .ts.
 * New file's field starts with "lib/": a user who types "lib/x.ts" after it means lib/x.ts, not lib/lib/x.ts
 * (issue 31), so a repeated leading "lib/" counts once.
 */
export function normalizeHelperPath(input: string): string {
  let p = input.trim().replace(/\\/g, "/").replace(/^(\.\/|\/)+/, "");
  if (p === "") return "";
  p = p.replace(/^(lib\/)+/, "lib/");
  if (!p.startsWith("lib/")) p = `lib/${p}`;
  const base = p.split("/").pop() ?? "";
  if (!base.includes(".")) p = `${p}.ts`;
  return p;
}

const SEGMENT = /^[A-Za-z0-9_-]+$/;
const MAX_FOLDERS = 4;

/** Why `path` cannot be a new helper file of `files`, or null if it can. `renaming`: the file being renamed. */
export function checkHelperPath(path: string, files: Record<string, string>, renaming?: string): string | null {
  if (path === "") return "Type a name, e.g. tools (it becomes lib/tools.ts).";
  if (path === renaming) return null;
  if (isRequiredFile(path)) return `"${path}" is a required file; helpers go under lib/.`;
  if (!path.startsWith("lib/")) return `"${path}": helper files live under lib/ (e.g. lib/tools.ts).`;
  if (Object.hasOwn(files, path)) return `"${path}" already exists.`;
  const parts = path.split("/");
  const base = parts[parts.length - 1] ?? "";
  if (base.endsWith(".d.ts")) return `"${path}": declaration files (.d.ts) cannot be added; write a .ts helper.`;
  if (!base.endsWith(".ts")) return `"${path}": helpers are TypeScript files; the name must end in .ts.`;
  const folders = parts.slice(1, -1);
  const names = [...folders, ...base.slice(0, -3).split(".")];
  if (names.some((n) => !SEGMENT.test(n))) {
    return `"${path}": file and folder names may use only letters, digits, "_" and "-" (e.g. lib/tools.ts, lib/game/board.ts).`;
  }
  if (folders.length > MAX_FOLDERS) return `"${path}": at most ${MAX_FOLDERS} folders deep under lib/.`;
  if (!renaming && Object.keys(files).length >= EXPERIMENT_MAX_FILES) {
    return `An experiment holds at most ${EXPERIMENT_MAX_FILES} files; delete one first.`;
  }
  // The contract's rule is the last word (it is what the server and the runner enforce).
  if (!isExperimentPath(path)) return `"${path}" is not a file an experiment can hold: use lib/<name>.ts.`;
  return null;
}

/** The text a new helper starts with: a module (an empty file is a script, which isolatedModules refuses). */
export function helperStub(path: string): string {
  const specifier = `./${path.replace(/\.ts$/, "")}`;
  return `// Import it from scenario.ts or reward.ts: import { … } from "${specifier}";\nexport {};\n`;
}

/** `files` with `from` renamed to `to`, keeping the order of the others. */
export function renameFile<T extends Record<string, string>>(files: T, from: string, to: string): T {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(files)) out[k === from ? to : k] = v;
  return out as T;
}

/** `files` without `path`. */
export function deleteFile<T extends Record<string, string>>(files: T, path: string): T {
  const { [path]: _removed, ...rest } = files;
  return rest as T;
}
