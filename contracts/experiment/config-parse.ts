/**
 * config.json → RunConfig, the one parser the editor, the web server and the runner share, with every
 * problem positioned where the user fixes it: JSON syntax errors at their line and column, schema errors at
 * the key they concern (`trainer.learning_rate: ...`), or line 1 when the key is absent (a default applied).
 */
import { RunConfig, type RunKind } from "../config";
import { findPrototypeKey, PROTOTYPE_KEYS, prototypeKeyMessage } from "../json-keys";
import type { Diagnostic } from "../run";
import { findKeyOffset, offsetToPosition, parseJson } from "./json-position";
import { mapPastedMcpServers, pastedSourcePath } from "./mcp-servers-paste";

/** `diagnostics` of a config that parsed: warnings only (what a pasted `mcpServers` became). */
export type ParseRunConfigResult = { ok: true; config: RunConfig; diagnostics: Diagnostic[] } | { ok: false; diagnostics: Diagnostic[] };

const FILE = "config.json";

function at(text: string, path: readonly (string | number)[], message: string, severity: Diagnostic["severity"] = "error"): Diagnostic {
  const offset = findKeyOffset(text, path);
  const pos = offset === undefined ? { line: 1, column: 1 } : offsetToPosition(text, offset);
  return { file: FILE, line: pos.line, column: pos.column, message, severity };
}

/** Rules that depend on the kind of run, beyond the schema. */
function kindRules(text: string, config: RunConfig, kind: RunKind | undefined): Diagnostic[] {
  if (kind === "train" && config.rollouts_per_group < 2) {
    return [at(text, ["rollouts_per_group"], "rollouts_per_group: GRPO needs at least 2 rollouts per group to compare")];
  }
  return [];
}

/** Parse config.json; `kind` adds the rules of that kind of run (omit it to check the schema only). */
export function parseRunConfig(text: string, kind?: RunKind): ParseRunConfigResult {
  // An empty file means "all defaults": nicer than an error for a new experiment.
  const json = text.trim() === "" ? ({ ok: true, value: {} } as const) : parseJson(text);
  if (!json.ok) {
    const pos = offsetToPosition(text, json.offset);
    const message = json.tooDeep ? `config.json is ${json.message}` : `config.json is not valid JSON: ${json.message}`;
    return { ok: false, diagnostics: [{ file: FILE, ...pos, message, severity: "error" }] };
  }
  // Before anything reads or merges it: zod would drop a "__proto__" key unseen (contracts/json-keys.ts).
  const protoKey = findPrototypeKey(json.value, PROTOTYPE_KEYS);
  if (protoKey) return { ok: false, diagnostics: [at(text, protoKey, `${protoKey.join(".")}: ${prototypeKeyMessage(String(protoKey.at(-1)))}`)] };
  // Editors' `mcpServers` becomes `mcp.servers` first, so the schema holds pasted servers to the same rules.
  const pasted = mapPastedMcpServers(json.value);
  // Shown whether or not the rest checks: the diagnostic model has no info level, so a warning says it.
  const notes = pasted.notes.map((n) => at(text, n.path, n.message, "warning"));
  const refused = pasted.problems.map((p) => at(text, p.path, `${p.path.join(".")}: ${p.message}`));
  const parsed = RunConfig.safeParse(pasted.value);
  if (!parsed.success || refused.length > 0) {
    const issues = parsed.success ? [] : parsed.error.issues;
    const diagnostics = issues.flatMap((issue) => {
      const path = pastedSourcePath(
        pasted.pasted,
        issue.path.filter((k): k is string | number => typeof k !== "symbol"),
      );
      // Unknown keys (the schemas are strict, so typos are caught) point at each key itself.
      if (issue.code === "unrecognized_keys") {
        return issue.keys.map((key) => at(text, [...path, key], `${[...path, key].join(".")}: unknown field`));
      }
      return [at(text, path, `${path.join(".") || "(root)"}: ${issue.message}`)];
    });
    return { ok: false, diagnostics: [...refused, ...diagnostics, ...notes] };
  }
  const rules = kindRules(text, parsed.data, kind);
  return rules.length > 0 ? { ok: false, diagnostics: [...rules, ...notes] } : { ok: true, config: parsed.data, diagnostics: notes };
}
