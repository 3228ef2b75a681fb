import { describe, expect, it } from "vitest";
import { findPrototypeKey, PROTOTYPE_KEYS, prototypeKeyMessage } from "./json-keys";

describe("keys that name a prototype", () => {
  it("finds a parsed __proto__ anywhere (JSON.parse keeps it as an own key), with its path", () => {
    expect(findPrototypeKey(JSON.parse('{"a": [1, {"b": {"__proto__": {"x": 1}}}]}'))).toEqual(["a", 1, "b", "__proto__"]);
    expect(findPrototypeKey(JSON.parse('{"__proto__": null}'))).toEqual(["__proto__"]);
    expect(findPrototypeKey({ a: { b: [1, "x"] } })).toBeNull();
  });

  it("constructor and prototype only where asked (merged settings), not in tool schemas", () => {
    const tool = JSON.parse('{"parameters": {"properties": {"constructor": {"type": "string"}}}}');
    expect(findPrototypeKey(tool)).toBeNull();
    expect(findPrototypeKey(tool, PROTOTYPE_KEYS)).toEqual(["parameters", "properties", "constructor"]);
  });

  it("says why", () => {
    expect(prototypeKeyMessage("__proto__")).toMatch(/^the key "__proto__" is refused: it names a JavaScript object's prototype/);
  });

  it("walks a value of any depth without recursion", () => {
    let deep: unknown = JSON.parse('{"__proto__": 1}');
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findPrototypeKey(deep)?.at(-1)).toBe("__proto__");
  });
});
