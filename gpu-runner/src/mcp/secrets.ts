/**
 * `${NAME}` references in an MCP server's env and headers, filled in at connect time from the workspace's
 * secrets that the web server sent with the run (RunSpec.secrets: only the names the run refers to). Tokens
 * stay out of config.json, which is stored with every run and shown to the team, and the runner's own
 * environment is never reachable by reference: an experiment author must not be able to send, say,
 * RUNNER_TOKEN to a server of their choosing.
 */
import { SECRET_REF } from "../../../contracts";

export interface McpSecrets {
  /** The run's workspace secrets, by name. */
  values: Readonly<Record<string, string>>;
}

export const NO_SECRETS: McpSecrets = { values: {} };

export type Resolved = { ok: true; values: Record<string, string> } | { ok: false; error: string };

/** Resolve every `${NAME}` in `values`; the first that cannot be resolved is an error naming field and secret. */
export function resolveSecretRefs(values: Readonly<Record<string, string>>, field: "env" | "headers", secrets: McpSecrets): Resolved {
  const out: Record<string, string> = {};
  for (const [key, raw] of Object.entries(values)) {
    let error: string | null = null;
    out[key] = raw.replace(new RegExp(SECRET_REF.source, "g"), (ref, name: string) => {
      if (error) return ref;
      const value = Object.hasOwn(secrets.values, name) ? secrets.values[name] : undefined;
      if (value === undefined) {
        error = `${field}.${key} uses \${${name}}, which is not a secret of this workspace (an admin adds it in Team → Secrets)`;
        return ref;
      }
      return value;
    });
    if (error) return { ok: false, error };
  }
  return { ok: true, values: out };
}
