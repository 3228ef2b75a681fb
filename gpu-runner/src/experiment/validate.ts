/**
 * One check of a whole experiment before a run starts (and for the editor's Check button): compile the
 * code, parse the tasks and the config, and report every problem of every file together, so a user is
 * not sent round one error at a time.
 */
import type { Diagnostic, ExperimentFiles, RunConfig, RunKind } from "../../contracts";
import { type CompiledExperiment, compileExperiment } from "./compile";
import { type TaskRow, parseTasks } from "./tasks";
import { parseRunConfig } from "./run-config";

export interface ExperimentTasks {
  train: TaskRow[];
  val: TaskRow[];
}

export type ValidateExperimentResult =
  | { ok: true; diagnostics: Diagnostic[]; compiled: CompiledExperiment; tasks: ExperimentTasks; config: RunConfig }
  | { ok: false; diagnostics: Diagnostic[]; compiled?: CompiledExperiment; tasks?: ExperimentTasks; config?: RunConfig };

export async function validateExperiment(files: ExperimentFiles, kind: RunKind): Promise<ValidateExperimentResult> {
  const compiled = await compileExperiment({ "scenario.ts": files["scenario.ts"], "reward.ts": files["reward.ts"] });
  const tasks = parseTasks(files["tasks.jsonl"]);
  const config = parseRunConfig(files["config.json"], kind);

  const diagnostics: Diagnostic[] = [
    ...(compiled.ok ? [] : compiled.diagnostics),
    ...(tasks.ok ? [] : tasks.diagnostics),
    ...(config.ok ? [] : config.diagnostics),
  ];
  const partial = {
    compiled: compiled.ok ? compiled.compiled : undefined,
    tasks: tasks.ok ? { train: tasks.train, val: tasks.val } : undefined,
    config: config.ok ? config.config : undefined,
  };
  if (partial.compiled && partial.tasks && partial.config && diagnostics.every((d) => d.severity !== "error")) {
    return { ok: true, diagnostics, compiled: partial.compiled, tasks: partial.tasks, config: partial.config };
  }
  return { ok: false, diagnostics, ...partial };
}
