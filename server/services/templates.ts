/**
 * Experiment templates (templates/<name>/): the experiment's files — scenario.ts, reward.ts, tasks.jsonl,
 * config.json and lib/**.ts — plus a template.json `{ "title", "description" }` for the New experiment
 * picker. Read from the repository (the process's cwd: scripts start from there).
 */
import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { ExperimentFiles, isExperimentPath } from "@contracts";
import { AppError } from "../errors";

export const TemplateMeta = z.object({
  title: z.string().min(1),
  description: z.string().default(""),
  /** Where it appears in the picker (lower first). */
  order: z.number().default(100),
});
export type TemplateMeta = z.infer<typeof TemplateMeta>;

const TEMPLATE_NAME = /^[a-z0-9][a-z0-9-]*$/;

export function templatesDir(root = process.cwd()): string {
  return path.resolve(root, "templates");
}

async function listFiles(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...(await listFiles(path.join(dir, entry.name), rel)));
    else if (isExperimentPath(rel)) out.push(rel);
  }
  return out;
}

/** The files of a template folder (any folder laid out like an experiment). */
export async function readExperimentDir(dir: string): Promise<ExperimentFiles> {
  const paths = await listFiles(dir);
  const entries = await Promise.all(paths.map(async (p) => [p, await fs.readFile(path.join(dir, p), "utf8")] as const));
  return ExperimentFiles.parse(Object.fromEntries(entries));
}

export async function readTemplate(name: string, root = process.cwd()): Promise<ExperimentFiles> {
  if (!TEMPLATE_NAME.test(name)) throw new AppError("BAD_INPUT", `no template named "${name}"`);
  const dir = path.join(templatesDir(root), name);
  try {
    await fs.access(path.join(dir, "scenario.ts"));
  } catch {
    throw new AppError("NOT_FOUND", `no template named "${name}"`);
  }
  return readExperimentDir(dir);
}

export async function listTemplates(root = process.cwd()): Promise<({ name: string } & TemplateMeta)[]> {
  const dir = templatesDir(root);
  const names = (await fs.readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory() && TEMPLATE_NAME.test(e.name)).map((e) => e.name);
  const metas = await Promise.all(
    names.map(async (name) => {
      const raw = await fs.readFile(path.join(dir, name, "template.json"), "utf8").catch(() => null);
      const meta = TemplateMeta.safeParse(raw ? JSON.parse(raw) : { title: name });
      return { name, ...(meta.success ? meta.data : { title: name, description: "", order: 100 }) };
    }),
  );
  return metas.sort((a, b) => a.order - b.order || a.name.localeCompare(b.name));
}
