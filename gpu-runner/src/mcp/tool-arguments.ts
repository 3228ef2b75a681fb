/**
 * A tool call's arguments checked against the tool's JSON Schema (an MCP tool's inputSchema, as the model
 * was shown it): the runner refuses an MCP call whose arguments do not fit before the server sees it, and
 * counts such a call as malformed in the rollout's stats. Validation is ajv's, through the MCP SDK's own
 * AjvJsonSchemaValidator (what the SDK's client uses for tools' output schemas), not a second validator.
 *
 * One rule beyond JSON Schema: an argument name the schema does not declare is refused when the schema lists
 * its `properties` and does not say what other names may carry (no `additionalProperties`, no
 * `patternProperties`, no composition). JSON Schema would let such a name through and most servers would
 * drop it in silence, so `{"locaton": "Paris"}` would run the tool without the argument the model meant.
 */
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { JsonSchemaType } from "@modelcontextprotocol/sdk/validation";

/** Why `args` do not fit, as one line naming the arguments; null when they fit. */
export type ArgumentsCheck = (args: Record<string, unknown>) => string | null;

export type CompiledCheck = { ok: true; check: ArgumentsCheck } | { ok: false; error: string };

/** Problems listed in one message; a model gets the first few, which is what it can act on. */
const MAX_PROBLEMS = 5;
/** Keywords under which a schema names or admits more arguments than its top-level `properties`. */
const OPEN_KEYWORDS = ["additionalProperties", "unevaluatedProperties", "allOf", "anyOf", "oneOf", "$ref", "if", "dependentSchemas", "dependencies"];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Names in `args` the schema does not take, when its `properties` are the whole list (see above). */
function unknownNames(schema: Record<string, unknown>, args: Record<string, unknown>): string[] {
  const properties = schema.properties;
  if (!isObject(properties)) return [];
  // additionalProperties: false closes the list whatever else the schema says, except names patternProperties admits.
  const closed = !("patternProperties" in schema) && (schema.additionalProperties === false || OPEN_KEYWORDS.every((k) => !(k in schema)));
  return closed ? Object.keys(args).filter((name) => !Object.hasOwn(properties, name)) : [];
}

/** `/opts/unit` (an ajv instancePath, a JSON Pointer) as `opts.unit`. */
const argumentPath = (pointer: string) =>
  pointer
    .slice(1)
    .split("/")
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
    .join(".");

/**
 * ajv's errorsText ("data must have required property 'a', data/b must be number") as problems that name
 * the argument. The SDK's validator gives only that text; each error starts with "data".
 */
function describeErrors(text: string, namedUnknown: boolean): string[] {
  return text.split(/, (?=data[/ ])/).flatMap((error) => {
    const required = /^data must have required property '(.*)'$/.exec(error);
    if (required) return [`missing required argument '${required[1]}'`];
    if (error === "data must NOT have additional properties") return namedUnknown ? [] : ["an argument the tool does not take"];
    const nested = /^data(\/\S*) (.*)$/.exec(error);
    if (nested) return [`argument '${argumentPath(nested[1]!)}' ${nested[2]}`];
    return [error.replace(/^data /, "the arguments ")];
  });
}

/**
 * Checks for the tools of one server or one run. Each instance holds its own ajv, whose compiled schemas
 * live as long as it does: a connection keeps one for its tools and drops it when the run ends.
 */
export class ToolArgumentsValidator {
  private readonly ajv = new AjvJsonSchemaValidator();

  /** Compile `schema` once; an error when ajv cannot use it (an unresolvable $ref, a malformed keyword). */
  compile(schema: Record<string, unknown>): CompiledCheck {
    // The draft is a validator's business, and only 2020-12 or draft-07 reach here; ajv reads both forms alike.
    const { $schema: _draft, ...rest } = schema;
    let validate: ReturnType<AjvJsonSchemaValidator["getValidator"]>;
    try {
      validate = this.ajv.getValidator(rest as JsonSchemaType);
    } catch (err) {
      return { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
    const check: ArgumentsCheck = (args) => {
      const unknown = unknownNames(rest, args);
      const result = validate(args);
      const problems = unknown.map((name) => {
        const takes = Object.keys(rest.properties as Record<string, unknown>);
        return `unknown argument '${name}' (the tool takes: ${takes.join(", ") || "no arguments"})`;
      });
      if (!result.valid) problems.push(...describeErrors(result.errorMessage, unknown.length > 0));
      if (problems.length === 0) return null;
      const more = problems.length > MAX_PROBLEMS ? `; and ${problems.length - MAX_PROBLEMS} more` : "";
      return `its arguments do not match its input schema: ${problems.slice(0, MAX_PROBLEMS).join("; ")}${more}`;
    };
    return { ok: true, check };
  }
}

/** Compiled checks kept across rollouts, by schema text; the whole generation is dropped when it is full. */
const CACHE_SIZE = 256;
let generation = { validator: new ToolArgumentsValidator(), checks: new Map<string, CompiledCheck>() };

/**
 * Why `args` do not fit `schema` (the parameters a tool was offered with), or null when they fit or the
 * schema is one ajv cannot compile (then nothing can be said against the call). For the rollout's counts:
 * schemas repeat across its turns and across rollouts, so their checks are cached.
 */
export function argumentsProblem(schema: Record<string, unknown>, args: Record<string, unknown>): string | null {
  const key = JSON.stringify(schema);
  let compiled = generation.checks.get(key);
  if (!compiled) {
    // A fresh ajv with the fresh map: ajv keeps every schema it compiled, so dropping the map alone would not free them.
    if (generation.checks.size >= CACHE_SIZE) generation = { validator: new ToolArgumentsValidator(), checks: new Map() };
    compiled = generation.validator.compile(schema);
    generation.checks.set(key, compiled);
  }
  return compiled.ok ? compiled.check(args) : null;
}
