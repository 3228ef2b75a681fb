/**
 * `${NAME}` references in an MCP server's env and headers, filled in from the runner's environment at
 * connect time, so tokens stay out of config.json (which is stored with every run and shown to the team).
 * Only names the runner's operator listed in MCP_SECRET_VARS can be read: an experiment author must not
 * be able to send, say, RUNNER_TOKEN to a server of their choosing.
 */
import { SECRET_REF } from "../../contracts";

export interface McpSecrets {
  /** Variable names experiments may reference (MCP_SECRET_VARS). */
  allowed: readonly string[];
  /** Their values, for those that are set. */
  values: Readonly<Record<string, string>>;
}

export const NO_SECRETS: McpSecrets = { allowed: [], values: {} };

export type Resolved = { ok: true; values: Record<string, string> } | { ok: false; error: string };

/** Resolve every `${NAME}` in `values`; the first that cannot be resolved is an error naming field and variable. */
export function resolveSecretRefs(values: Readonly<Record<string, string>>, field: "env" | "headers", secrets: McpSecrets): Resolved {
  const out: Record<string, string> = {};
  for (const [key, raw] of Object.entries(values)) {
    let error: string | null = null;
    out[key] = raw.replace(new RegExp(SECRET_REF.source, "g"), (ref, name: string) => {
      if (error) return ref;
      if (!secrets.allowed.includes(name)) {
        error = `${field}.${key} uses \${${name}}, which this runner does not share with experiments (add ${name} to MCP_SECRET_VARS in the runner's environment)`;
        return ref;
      }
      const value = secrets.values[name];
      if (value === undefined) {
        error = `${field}.${key} uses \${${name}}, which is not set in the runner's environment`;
        return ref;
      }
      return value;
    });
    if (error) return { ok: false, error };
  }
  return { ok: true, values: out };
}
