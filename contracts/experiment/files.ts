/**
 * The experiment model: an experiment is a map of files — scenario.ts, reward.ts, tasks.jsonl, config.json
 * and any helpers under lib/ — with imports between the TypeScript files. Written once here and used by the
 * editor, the web server (storing versions) and the runner (compiling and running them).
 */
import { z } from "zod";
import { formatBytes, utf8ByteLength } from "../bytes";

export const REQUIRED_FILES = ["scenario.ts", "reward.ts", "tasks.jsonl", "config.json"] as const;
export type RequiredFile = (typeof REQUIRED_FILES)[number];

/** The documented cap on an experiment's files together (UTF-8 bytes; decimal megabytes, as file browsers show). */
export const EXPERIMENT_MAX_BYTES = 8_000_000;
/** Files per experiment: helpers, not a vendored dependency tree. */
export const EXPERIMENT_MAX_FILES = 64;

/** `lib/<name>.ts`, nested folders allowed (`lib/tools/calc.ts`); names are plain identifiers-ish. */
const LIB_PATH = /^lib\/(?:[A-Za-z0-9_-]+\/){0,4}[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.ts$/;

export function isRequiredFile(path: string): path is RequiredFile {
  return (REQUIRED_FILES as readonly string[]).includes(path);
}

/** A path an experiment may hold: one of the required files or a TypeScript helper under lib/. */
export function isExperimentPath(path: string): boolean {
  return isRequiredFile(path) || (LIB_PATH.test(path) && !path.endsWith(".d.ts"));
}

/** TypeScript files (scenario, reward, lib/…): the code that is type-checked, bundled and run. */
export function isCodeFile(path: string): boolean {
  return path.endsWith(".ts") && isExperimentPath(path);
}

export function filesBytes(files: Record<string, string>): number {
  let n = 0;
  for (const text of Object.values(files)) n += utf8ByteLength(text);
  return n;
}

export const ExperimentFiles = z
  .object({
    "scenario.ts": z.string().describe("The rollout: `export default async function rollout(ctx) { ... }`"),
    "reward.ts": z.string().describe("The reward: `export default function reward({ task, output, messages }) { ... }`"),
    "tasks.jsonl": z.string().describe('One JSON object per line; `"split": "val"` marks validation tasks'),
    "config.json": z.string().describe("The run configuration (RunConfig)"),
  })
  .catchall(z.string())
  .superRefine((files, ctx) => {
    const paths = Object.keys(files);
    for (const path of paths) {
      if (!isExperimentPath(path)) {
        ctx.addIssue({
          code: "custom",
          path: [path],
          message: `"${path}" is not a file an experiment can hold: use scenario.ts, reward.ts, tasks.jsonl, config.json or lib/<name>.ts`,
        });
      } else if (files[path]!.includes("\0")) {
        ctx.addIssue({ code: "custom", path: [path], message: `${path} contains a NUL character` });
      }
    }
    if (paths.length > EXPERIMENT_MAX_FILES) {
      ctx.addIssue({ code: "custom", path: [], message: `an experiment holds at most ${EXPERIMENT_MAX_FILES} files (this one has ${paths.length})` });
    }
    const bytes = filesBytes(files);
    if (bytes > EXPERIMENT_MAX_BYTES) {
      ctx.addIssue({
        code: "custom",
        path: [],
        message: `the experiment's files are ${formatBytes(bytes)} together; the limit is ${formatBytes(EXPERIMENT_MAX_BYTES)}`,
      });
    }
  });
export type ExperimentFiles = z.infer<typeof ExperimentFiles>;

/** Display order: the four required files first (the order the editor shows them), then lib/ by path. */
export function sortPaths(paths: Iterable<string>): string[] {
  const rank = (p: string) => {
    const i = (REQUIRED_FILES as readonly string[]).indexOf(p);
    return i < 0 ? REQUIRED_FILES.length : i;
  };
  return [...paths].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** The experiment's TypeScript files, in display order. */
export function codePaths(files: Record<string, string>): string[] {
  return sortPaths(Object.keys(files).filter(isCodeFile));
}

/** Where a relative import resolves among the experiment's files, or null. */
export function resolveRelativeImport(fromPath: string, specifier: string, files: Record<string, string>): string | null {
  if (!specifier.startsWith("./") && !specifier.startsWith("../")) return null;
  const parts = fromPath.split("/").slice(0, -1);
  for (const seg of specifier.split("/")) {
    if (seg === "." || seg === "") continue;
    if (seg === "..") {
      if (parts.length === 0) return null;
      parts.pop();
    } else parts.push(seg);
  }
  const base = parts.join("/");
  const bare = base.replace(/\.(js|ts)$/, "");
  for (const candidate of [`${bare}.ts`, `${bare}/index.ts`]) {
    if (Object.hasOwn(files, candidate) && isCodeFile(candidate)) return candidate;
  }
  return null;
}

/** Every module an experiment's code may import besides its own files (see the runner's bundler). */
export const ALLOWED_PACKAGES = ["rollbook", "zod"] as const;
