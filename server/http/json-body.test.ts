import { describe, expect, it } from "vitest";
import { readJsonBody } from "./json-body";

const cap = { limit: 1_000_000, setting: "TEST" };
const read = (body: string) => readJsonBody(new Request("http://x/", { method: "POST", body }), cap);

describe("a door's JSON body", () => {
  it("parses JSON; an empty body is {}", async () => {
    expect(await read('{"a": [1, "NaN", "Infinity"]}')).toEqual({ ok: true, value: { a: [1, "NaN", "Infinity"] } });
    expect(await read("")).toEqual({ ok: true, value: {} });
  });

  it("names the field of Python's NaN / Infinity / -Infinity literals (json.dumps writes them); strings holding the words are fine", async () => {
    expect(await read('{"cfg": {"lr": NaN}}')).toMatchObject({ ok: false, status: 400, path: ["cfg", "lr"], message: expect.stringMatching(/^NaN is not a finite number/) });
    expect(await read('{"x": "NaN", "y": [1, -Infinity]}')).toMatchObject({ ok: false, path: ["y", 1], message: expect.stringMatching(/^-Infinity is not/) });
    expect(await read('{"s": "a \\" Infinity", "v": Infinity}')).toMatchObject({ ok: false, path: ["v"], message: expect.stringMatching(/^Infinity is not/) });
    expect(await read('{"a": NaN,')).toMatchObject({ ok: false, path: null, message: "the request body is not JSON" });
  });

  it("refuses NUL in a value or a key, and a __proto__ key, naming the path", async () => {
    expect(await read('{"a": ["x\\u0000"]}')).toMatchObject({ ok: false, status: 400, path: ["a", 0], message: expect.stringMatching(/NUL/) });
    expect(await read('{"k\\u0000": 1}')).toMatchObject({ ok: false, path: ["k\u0000"], message: expect.stringMatching(/^the key contains a NUL/) });
    expect(await read('{"a": {"__proto__": {"b": 1}}}')).toMatchObject({ ok: false, path: ["a", "__proto__"], message: expect.stringMatching(/prototype/) });
  });
});
