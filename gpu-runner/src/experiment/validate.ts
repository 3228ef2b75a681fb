/**
 * One check of a whole experiment, once per start (and for the editor's Check button): compile the code,
 * parse the tasks and the config, look inside the bundle (its exports; every task row against the
 * scenario's taskSchema), and report every problem of every file together, so a user is not sent round
 * one error at a time: type errors, config errors and rows that do not fit taskSchema in one list.
 */
import { LimitsConfig, parseRunConfig, type Diagnostic, type ExperimentFiles, type RunConfig, type RunKind } from "../../../contracts";
import type { SandboxPlacement } from "../sandbox/cpu/share";
import { inspectExperiment, type ExperimentExports } from "../sandbox/inspect";
import { type CompiledExperiment, compileExperiment } from "./compile";
import { type TaskRow, parseTasks } from "./tasks";

export interface ExperimentTasks {
  train: TaskRow[];
  val: TaskRow[];
}

export interface ValidExperiment {
  compiled: CompiledExperiment;
  tasks: ExperimentTasks;
  config: RunConfig;
  exports: ExperimentExports;
}

export type ValidateExperimentResult =
  | ({ ok: true; diagnostics: Diagnostic[] } & ValidExperiment)
  | { ok: false; diagnostics: Diagnostic[] };

/** Task rows that do not fit taskSchema, at their line in tasks.jsonl (the first 50, then a count). */
function taskSchemaDiagnostics(rows: readonly TaskRow[], errors: { row: number; path: string; message: string }[], failed: number): Diagnostic[] {
  const out: Diagnostic[] = errors.map((e) => {
    const row = rows[e.row];
    const line = row?.line ?? 1;
    const field = e.path ? `, field "${e.path}"` : "";
    return { file: "tasks.jsonl", line, column: 1, message: `tasks.jsonl line ${line}${field}: does not fit taskSchema: ${e.message}`, severity: "error" as const };
  });
  if (failed > errors.length) {
    out.push({ file: "tasks.jsonl", line: 1, column: 1, message: `${failed - errors.length} more task rows do not fit taskSchema`, severity: "error" });
  }
  return out;
}

/** `placement`: whose CPU share the check's sandbox computes under (a run's start: the run's; absent: none). */
export async function validateExperiment(files: ExperimentFiles, kind: RunKind, placement?: SandboxPlacement): Promise<ValidateExperimentResult> {
  const compiled = await compileExperiment(files);
  const tasks = parseTasks(files["tasks.jsonl"]);
  const config = parseRunConfig(files["config.json"], kind);
  const diagnostics: Diagnostic[] = [
    ...(compiled.ok ? [] : compiled.diagnostics),
    ...(tasks.ok ? [] : tasks.diagnostics),
    // A config that parsed may still carry warnings (what a pasted mcpServers became).
    ...config.diagnostics,
  ];
  // The rows are checked against taskSchema whenever there is a script and rows to check, even beside type or
  // config errors: a config error used to hide a bad row until it was fixed (issue 31). A config that did not
  // parse gives the check the default limits.
  const script = compiled.ok ? compiled.compiled : compiled.bundled;
  if (!script || !tasks.ok) return { ok: false, diagnostics };

  const rows = [...tasks.train, ...tasks.val];
  const limits = config.ok ? config.config.limits : LimitsConfig.parse({});
  const inspected = await inspectExperiment(script, rows.map((r) => r.data), limits, placement);
  if (!inspected.ok) {
    const where = inspected.error.stack?.match(/\(?([\w./-]+\.ts):(\d+):(\d+)\)?/);
    const file = where?.[1] ?? "scenario.ts";
    diagnostics.push({
      file,
      line: Number(where?.[2] ?? 1),
      column: Number(where?.[3] ?? 1),
      message: `the experiment failed to load: ${inspected.error.message}`,
      severity: "error",
    });
    return { ok: false, diagnostics };
  }
  diagnostics.push(...taskSchemaDiagnostics(rows, inspected.taskErrors, inspected.failedRows));
  if (inspected.exports.taskSchema === "invalid") {
    diagnostics.push({ file: "scenario.ts", line: 1, column: 1, message: "scenario.ts exports a taskSchema that is not a zod schema", severity: "error" });
  }
  if (!compiled.ok || !config.ok || diagnostics.some((d) => d.severity === "error")) return { ok: false, diagnostics };
  return { ok: true, diagnostics, compiled: compiled.compiled, tasks: { train: tasks.train, val: tasks.val }, config: config.config, exports: inspected.exports };
}
