/**
 * Tool-call arguments against a tool's JSON Schema, with ajv (the MCP SDK's validator): problems name the
 * argument, an undeclared argument name is refused unless the schema admits other names, and a schema ajv
 * cannot compile says so instead of passing every call.
 *   npx vitest run --project unit gpu-runner/src/mcp/tool-arguments.test.ts
 */
import { describe, expect, it } from "vitest";
import { argumentsProblem, ToolArgumentsValidator } from "./tool-arguments";

// What the MCP SDK's McpServer makes of { a: z.number(), b: z.number() } (server-everything's get-sum).
const SUM = { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] };

function check(schema: Record<string, unknown>, args: Record<string, unknown>): string | null {
  const compiled = new ToolArgumentsValidator().compile(schema);
  if (!compiled.ok) throw new Error(compiled.error);
  return compiled.check(args);
}

describe("tool arguments against the tool's input schema", () => {
  it("passes arguments that fit", () => {
    expect(check(SUM, { a: 1, b: 2.5 })).toBeNull();
    expect(check({ type: "object", properties: {} }, {})).toBeNull();
    expect(check({ type: "object" }, { anything: true })).toBeNull();
  });

  it("a wrong argument name: the unknown name and the missing one, each named", () => {
    expect(check(SUM, { a: 1, c: 2 })).toBe(
      "its arguments do not match its input schema: unknown argument 'c' (the tool takes: a, b); missing required argument 'b'",
    );
  });

  it("a wrong type names the argument, nested ones by their path", () => {
    expect(check(SUM, { a: 1, b: "two" })).toBe("its arguments do not match its input schema: argument 'b' must be number");
    const nested = { type: "object", properties: { opts: { type: "object", properties: { unit: { enum: ["C", "F"] } } } } };
    expect(check(nested, { opts: { unit: "K" } })).toMatch(/argument 'opts\.unit' must be equal to one of the allowed values/);
  });

  it("an optional argument misspelt is refused, though plain JSON Schema would let it through", () => {
    const weather = { type: "object", properties: { location: { type: "string" }, unit: { type: "string" } } };
    expect(check(weather, { locaton: "Paris" })).toMatch(/unknown argument 'locaton' \(the tool takes: location, unit\)/);
  });

  it("other names pass where the schema admits them", () => {
    expect(check({ ...SUM, additionalProperties: true }, { a: 1, b: 2, c: 3 })).toBeNull();
    expect(check({ ...SUM, additionalProperties: { type: "number" } }, { a: 1, b: 2, c: 3 })).toBeNull();
    expect(check({ ...SUM, patternProperties: { "^x_": {} } }, { a: 1, b: 2, x_y: 3 })).toBeNull();
    expect(check({ type: "object", properties: { a: {} }, anyOf: [{ properties: { b: {} } }] }, { a: 1, b: 2 })).toBeNull();
    // additionalProperties: false names the stray argument once (not also ajv's nameless "additional properties").
    expect(check({ ...SUM, additionalProperties: false }, { a: 1, b: 2, c: 3 })).toBe(
      "its arguments do not match its input schema: unknown argument 'c' (the tool takes: a, b)",
    );
  });

  it("$schema of draft 2020-12, $defs and $ref, as pydantic and zod write them", () => {
    const schema = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: { point: { $ref: "#/$defs/Point" } },
      required: ["point"],
      $defs: { Point: { type: "object", properties: { x: { type: "integer" } }, required: ["x"] } },
    };
    expect(check(schema, { point: { x: 1 } })).toBeNull();
    expect(check(schema, { point: { x: 1.5 } })).toMatch(/argument 'point\.x' must be integer/);
  });

  it("a schema that cannot be compiled is an error, not a check that passes everything", () => {
    const compiled = new ToolArgumentsValidator().compile({ type: "object", properties: { a: { $ref: "#/nowhere" } } });
    expect(compiled).toMatchObject({ ok: false, error: expect.stringMatching(/can't resolve reference #\/nowhere/) });
  });

  it("argumentsProblem (the rollout's counts): the same verdicts, cached by schema; an uncompilable schema says nothing", () => {
    expect(argumentsProblem(SUM, { a: 1, b: 2 })).toBeNull();
    expect(argumentsProblem({ ...SUM }, { a: 1, c: 2 })).toMatch(/unknown argument 'c'/);
    expect(argumentsProblem({ type: "object", properties: { a: { $ref: "#/nowhere" } } }, { a: 1 })).toBeNull();
  });
});
