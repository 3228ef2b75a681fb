import { describe, expect, it } from "vitest";
import { z } from "zod";
import { parseEnv } from "./env";

const Settings = z.object({ PORT: z.coerce.number().int().min(1).default(3000), NAME: z.string().optional() });

describe("parseEnv, the one environment loader", () => {
  it("takes defaults for unset and empty keys, and ignores keys it does not declare", () => {
    expect(parseEnv(Settings, { PORT: "", OTHER: "x" }, "test")).toEqual({ PORT: 3000 });
    expect(parseEnv(Settings, { PORT: "8080", NAME: "a" }, "test")).toEqual({ PORT: 8080, NAME: "a" });
  });

  it("names every bad field and whose environment it is", () => {
    expect(() => parseEnv(Settings, { PORT: "0" }, "runner")).toThrow(/^Invalid runner environment:\n {2}PORT: /);
  });
});
