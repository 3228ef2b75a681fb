/**
 * The one environment loader, shared by the web server (server/env.ts) and the runner (gpu-runner/src/env.ts):
 * each declares its settings as a zod object with a default and a reason per key; this parses them once.
 * Empty strings count as unset (`FOO= npm start` means "use the default", as in a .env file). Written here
 * rather than with @t3-oss/env-core: that library's value is the client/server split of a Next bundle, which
 * neither process needs, and this is one loop.
 */
import type { z } from "zod";

/** Parse `source` against `schema`; a bad value throws one error naming every field: "Invalid <who> environment: …". */
export function parseEnv<S extends z.ZodObject>(schema: S, source: Readonly<Record<string, string | undefined>>, who: string): z.infer<S> {
  const cleaned: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = source[key];
    if (value !== undefined && value !== "") cleaned[key] = value;
  }
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`Invalid ${who} environment:\n${lines.join("\n")}`);
  }
  return parsed.data;
}
