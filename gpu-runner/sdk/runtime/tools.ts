/**
 * `tool(...)`: a tool the model can call, defined in TypeScript and executed inside the sandbox. Its
 * parameters are a zod schema or a JSON Schema; either way the model is shown a JSON Schema and the
 * arguments it writes are checked with zod before `execute` runs (a JSON Schema is read with
 * `z.fromJSONSchema`, so both kinds are checked by the same code).
 */
import * as z from "zod";
import type * as Sdk from "../../../contracts/sdk/rollbook";
import { identifierRule, isIdentifier } from "../../../contracts/identifiers";

function isZodSchema(value: unknown): value is z.ZodType {
  return typeof value === "object" && value !== null && "_zod" in value;
}

/** A zod issue list as one line: `a: expected number, received string; b: required`. */
export function formatIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.map(String).join(".") : "(arguments)"}: ${i.message}`)
    .join("; ");
}

function toJsonSchema(schema: z.ZodType, name: string): Sdk.JsonSchema {
  try {
    const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Sdk.JsonSchema;
    return rest;
  } catch (err) {
    throw new TypeError(`tool "${name}": its zod parameters cannot be shown to the model as JSON Schema (${(err as Error).message})`);
  }
}

function fromJsonSchema(schema: Sdk.JsonSchema, name: string): z.ZodType {
  try {
    return z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (err) {
    throw new TypeError(`tool "${name}": parameters is not a JSON Schema zod can read (${(err as Error).message})`);
  }
}

/** Parse the model's argument string: a JSON object, checked against the schema. */
export function parseToolArguments<T>(json: string, schema: z.ZodType | null): { ok: true; args: T } | { ok: false; error: string } {
  let value: unknown;
  try {
    value = json.trim() === "" ? {} : JSON.parse(json);
  } catch (err) {
    return { ok: false, error: `the arguments are not valid JSON (${(err as Error).message})` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { ok: false, error: "the arguments must be a JSON object" };
  }
  if (!schema) return { ok: true, args: value as T };
  const parsed = schema.safeParse(value);
  return parsed.success ? { ok: true, args: parsed.data as T } : { ok: false, error: `invalid arguments: ${formatIssues(parsed.error)}` };
}

// Typed as the SDK declares it; inside, arguments are only known to be what the schema accepted.
export const tool = ((definition: Sdk.ToolDefinition<z.ZodType | Sdk.JsonSchema, unknown>) => {
  const { name, description, parameters, execute } = definition;
  if (!isIdentifier("tool_name", name)) {
    throw new TypeError(`tool name ${JSON.stringify(name)}: a tool name is ${identifierRule("tool_name")}`);
  }
  if (typeof description !== "string") throw new TypeError(`tool "${name}": description must be a string`);
  if (typeof execute !== "function") throw new TypeError(`tool "${name}": execute must be a function`);
  if (parameters === null || typeof parameters !== "object") throw new TypeError(`tool "${name}": parameters must be a zod schema or a JSON Schema object`);
  const schema = isZodSchema(parameters) ? parameters : fromJsonSchema(parameters, name);
  const jsonSchema = isZodSchema(parameters) ? toJsonSchema(parameters, name) : (parameters as Sdk.JsonSchema);
  const spec: Sdk.ToolSpec = { type: "function", function: { name, description, parameters: jsonSchema } };
  return Object.freeze({
    name,
    description,
    parameters: jsonSchema,
    spec,
    parseArguments: (json: string) => parseToolArguments(json, schema),
    execute,
  });
}) as typeof Sdk.tool;

/** A tool whose arguments are only checked to be a JSON object here (MCP tools: the runner checks them against the tool's input schema before the server sees them, mcp/tool-arguments.ts). */
export function passthroughTool<R>(
  spec: Sdk.ToolSpec,
  execute: (args: { [key: string]: unknown }, context: Sdk.ToolContext) => Promise<R>,
): Sdk.Tool<{ [key: string]: unknown }, R> {
  return Object.freeze({
    name: spec.function.name,
    description: spec.function.description ?? "",
    parameters: (spec.function.parameters ?? { type: "object" }) as Sdk.JsonSchema,
    spec,
    parseArguments: (json: string) => parseToolArguments<{ [key: string]: unknown }>(json, null),
    execute,
  });
}

export function isTool(value: unknown): value is Sdk.AnyTool {
  return typeof value === "object" && value !== null && "spec" in value && "execute" in value && typeof (value as Sdk.AnyTool).execute === "function";
}

/** What a tool returned, as the content of its tool message: strings as is, MCP results as their text, else JSON. */
export function formatToolResult(result: unknown): string {
  if (typeof result === "string") return result;
  if (result === undefined) return "";
  if (typeof result === "object" && result !== null && "text" in result && "isError" in result) {
    const r = result as Sdk.McpToolResult;
    return r.isError ? `Error: ${r.text}` : r.text;
  }
  try {
    return JSON.stringify(result) ?? String(result);
  } catch {
    return String(result);
  }
}
