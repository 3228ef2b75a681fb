import { describe, expect, it } from "vitest";
import { z } from "zod";
import { RunConfig } from "./config";

// The editor's hovers on config.json are the `description`s of this JSON Schema (components/editor/
// monaco-setup.ts builds it with the same options), so a field without `.describe()` hovers blank.

type Schema = { [key: string]: unknown };

interface Property {
  /** e.g. `trainer.learning_rate`, `mcp.servers.*.url` (`*`: any key of a record). */
  path: string;
  schema: Schema;
}

const isSchema = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

/** Follows a local `#/...` $ref, as Monaco does, so a description on the target counts. */
function resolve(root: Schema, node: Schema): Schema {
  const ref = node.$ref;
  if (typeof ref !== "string" || !ref.startsWith("#")) return node;
  let target: unknown = root;
  for (const part of ref.slice(1).split("/").filter(Boolean)) target = isSchema(target) ? target[part] : undefined;
  return isSchema(target) ? { ...target, ...node } : node;
}

/** Every named property at any depth: nested objects, records' values, array items and union branches. */
function properties(root: Schema): Property[] {
  const out: Property[] = [];
  // A $ref is walked once: its properties are the same wherever it is used, and a recursive one ends.
  const seenRefs = new Set<string>();
  const walk = (raw: Schema, path: string) => {
    if (typeof raw.$ref === "string") {
      if (seenRefs.has(raw.$ref)) return;
      seenRefs.add(raw.$ref);
    }
    const node = resolve(root, raw);
    if (isSchema(node.properties)) {
      for (const [key, value] of Object.entries(node.properties)) {
        if (!isSchema(value)) continue;
        const child = path ? `${path}.${key}` : key;
        out.push({ path: child, schema: resolve(root, value) });
        walk(value, child);
      }
    }
    for (const key of ["anyOf", "oneOf", "allOf", "prefixItems"]) {
      const branches = node[key];
      if (Array.isArray(branches)) for (const b of branches) if (isSchema(b)) walk(b, path);
    }
    for (const key of ["additionalProperties", "items", "not", "then", "else"]) {
      const sub = node[key];
      if (isSchema(sub)) walk(sub, key === "additionalProperties" ? `${path}.*` : path);
    }
  };
  walk(root, "");
  return out;
}

const schema = z.toJSONSchema(RunConfig, { io: "input", unrepresentable: "any" }) as Schema;
const all = properties(schema);

describe("config.json hovers", () => {
  it("walks every level of RunConfig", () => {
    const paths = all.map((p) => p.path);
    // Sentinels at each depth, so a walker that found nothing could not pass the checks below.
    expect(paths).toEqual(expect.arrayContaining(["model", "trainer", "trainer.learning_rate", "limits.memory_mb", "judge.base_url", "mcp.servers.*.url", "mcp.servers.*.tools"]));
    expect(paths.length).toBeGreaterThan(60);
  });

  it("every property has a description", () => {
    const missing = all.filter((p) => typeof p.schema.description !== "string" || p.schema.description.trim() === "").map((p) => p.path);
    expect(missing).toEqual([]);
  });

  it("every property with a default says what it is", () => {
    // Monaco's hover shows the description alone, not the schema's `default`.
    const silent = all
      .filter((p) => "default" in p.schema && !/default/i.test(String(p.schema.description)))
      .map((p) => p.path);
    expect(silent).toEqual([]);
  });
});
