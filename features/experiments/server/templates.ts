/**
 * Experiment templates (templates/<name>/): the experiment's files — scenario.ts, reward.ts, tasks.jsonl,
 * config.json and lib/**.ts — plus a template.json `{ "title", "description" }` for the New experiment
 * picker. Read from the repository (the process's cwd: scripts start from there).
 */
import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { ExperimentFiles, isExperimentPath, sortPaths } from "@contracts";
import { AppError } from "@/server/errors";

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

export interface TemplateSummary extends TemplateMeta {
  name: string;
  /** The template's files in display order, so the picker can say what a new experiment starts with. */
  paths: string[];
}

export async function listTemplates(root = process.cwd()): Promise<TemplateSummary[]> {
  const dir = templatesDir(root);
  const names = (await fs.readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory() && TEMPLATE_NAME.test(e.name)).map((e) => e.name);
  const metas = await Promise.all(
    names.map(async (name) => {
      const raw = await fs.readFile(path.join(dir, name, "template.json"), "utf8").catch(() => null);
      const meta = TemplateMeta.safeParse(raw ? safeJson(raw) : { title: name });
      const paths = sortPaths(await listFiles(path.join(dir, name)));
      return { name, paths, ...(meta.success ? meta.data : { title: name, description: "", order: 100 }) };
    }),
  );
  // A folder without scenario.ts is not a template (readTemplate refuses it too).
  return metas.filter((t) => t.paths.includes("scenario.ts")).sort((a, b) => a.order - b.order || a.name.localeCompare(b.name));
}

/** A template.json that is not JSON lists the template under its folder name rather than hiding it. */
function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}

/**
 * The blank experiment: the smallest files that pass the runner's checks and run, so "blank" starts from
 * something a dry run accepts rather than from empty files that fail on Run.
 */
export const BLANK_FILES: ExperimentFiles = {
  "scenario.ts": `import type { RolloutContext } from "rollbook";
import { z } from "zod";

// Every row of tasks.jsonl is checked against this schema before a run starts.
export const taskSchema = z.object({ prompt: z.string() });
export type Task = z.infer<typeof taskSchema>;

export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  const reply = await ctx.chat([{ role: "user", content: ctx.task.prompt }]);
  return reply.content;
}
`,
  "reward.ts": `import type { RewardInput, RewardResult } from "rollbook";
import type { Task } from "./scenario";

// Replace with what "good" means for your task; this one pays for short replies.
export default function reward({ output }: RewardInput<Task, string>): RewardResult {
  const words = output.trim().split(/\\s+/).filter(Boolean).length;
  return { reward: words === 0 ? 0 : Math.min(1, 3 / words), metrics: { words } };
}
`,
  "tasks.jsonl": `{"prompt": "Say hello."}
{"prompt": "Name a colour."}
{"prompt": "Name a fruit."}
{"prompt": "Say goodbye.", "split": "val"}
`,
  "config.json": `{
  "num_steps": 4,
  "groups_per_step": 3,
  "rollouts_per_group": 4,
  "sampling": { "max_tokens": 24 }
}
`,
};

/** The files a new experiment starts with: a template's, or the blank ones (template null). */
export async function startingFiles(template: string | null, root = process.cwd()): Promise<{ files: ExperimentFiles; description: string }> {
  if (template === null) return { files: BLANK_FILES, description: "" };
  const files = await readTemplate(template, root);
  const meta = (await listTemplates(root)).find((t) => t.name === template);
  return { files, description: meta?.description ?? "" };
}
