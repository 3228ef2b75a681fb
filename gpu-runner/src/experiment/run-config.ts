/**
 * config.json → RunConfig (the contract's zod schema, so the editor, web server and runner agree), with
 * every problem positioned where the user can fix it: JSON syntax errors at their line and column, schema
 * errors at the line of the offending key (`trainer.learning_rate: ...`), or line 1 when the key is absent.
 */
import { RunConfig, type Diagnostic, type RunKind } from "../../contracts";
import { findKeyOffset, jsonErrorOffset, offsetToPosition } from "./json-position";

export { validateExperiment, type ValidateExperimentResult } from "./validate";

export type ParseRunConfigResult = { ok: true; config: RunConfig } | { ok: false; diagnostics: Diagnostic[] };

const FILE = "config.json";

function at(text: string, path: readonly (string | number)[], message: string): Diagnostic {
  const offset = findKeyOffset(text, path);
  const pos = offset === undefined ? { line: 1, column: 1 } : offsetToPosition(text, offset);
  return { file: FILE, line: pos.line, column: pos.column, message, severity: "error" };
}

export function parseRunConfig(text: string, kind: RunKind): ParseRunConfigResult {
  let raw: unknown;
  try {
    // An empty file means "all defaults": nicer than an error for a new experiment.
    raw = text.trim() === "" ? {} : JSON.parse(text);
  } catch (err) {
    const pos = offsetToPosition(text, jsonErrorOffset(text, err));
    const message = `config.json is not valid JSON: ${(err as Error).message}`;
    return { ok: false, diagnostics: [{ file: FILE, ...pos, message, severity: "error" }] };
  }

  const parsed = RunConfig.safeParse(raw);
  if (!parsed.success) {
    const diagnostics = parsed.error.issues.flatMap((issue) => {
      const path = issue.path.filter((k): k is string | number => typeof k !== "symbol");
      // Unknown keys (the schemas are strict, so typos are caught) point at each key itself.
      if (issue.code === "unrecognized_keys") {
        return issue.keys.map((key) => at(text, [...path, key], `${[...path, key].join(".")}: unknown field`));
      }
      return [at(text, path, `${path.join(".") || "(root)"}: ${issue.message}`)];
    });
    return { ok: false, diagnostics };
  }

  const config = parsed.data;
  if (kind === "train" && config.rollouts_per_group < 2) {
    return {
      ok: false,
      diagnostics: [
        at(text, ["rollouts_per_group"], "rollouts_per_group: GRPO needs at least 2 rollouts per group to compare"),
      ],
    };
  }
  return { ok: true, config };
}
