/**
 * Prints the JSON Schema zod emits (`z.toJSONSchema`) for contract exports, for the engine's contract tests
 * (tests/zod_contract.py), which compare it with the pydantic mirrors' own JSON Schema.
 *
 *   node --import tsx emit_zod_schemas.ts '{"<path of a contracts module>": ["ExportName", ...], ...}'
 *
 * Prints {module: {name: {input, output}}}: the input view (what a parser accepts: defaults make a field
 * optional) and the output view (what it returns: a field with a default is always there).
 */
import { z } from "zod";

const wanted = JSON.parse(process.argv[2] ?? "{}") as Record<string, string[]>;
const out: Record<string, Record<string, { input: unknown; output: unknown }>> = {};
for (const [path, names] of Object.entries(wanted)) {
  const mod = (await import(path)) as Record<string, z.ZodType | undefined>;
  out[path] = {};
  for (const name of names) {
    const schema = mod[name];
    if (schema === undefined) throw new Error(`${path} exports no ${name}`);
    out[path][name] = { input: z.toJSONSchema(schema, { io: "input" }), output: z.toJSONSchema(schema, { io: "output" }) };
  }
}
process.stdout.write(JSON.stringify(out));
