import { describe, expect, it } from "vitest";
import { resolveSecretRefs } from "./secrets";
import { StderrTail } from "./stderr-tail";

describe("resolveSecretRefs", () => {
  const secrets = { allowed: ["TOKEN", "UNSET"], values: { TOKEN: "t0k" } };

  it("fills every ${NAME} in place and leaves other text alone", () => {
    expect(resolveSecretRefs({ A: "${TOKEN}", B: "Bearer ${TOKEN}/${TOKEN}", C: "plain $TOKEN" }, "env", secrets)).toEqual({
      ok: true,
      values: { A: "t0k", B: "Bearer t0k/t0k", C: "plain $TOKEN" },
    });
  });

  it("names field and variable when one is not shared or not set", () => {
    expect(resolveSecretRefs({ X: "${SECRET}" }, "headers", secrets)).toEqual({
      ok: false,
      error: "headers.X uses ${SECRET}, which this runner does not share with experiments (add SECRET to MCP_SECRET_VARS in the runner's environment)",
    });
    expect(resolveSecretRefs({ Y: "a${UNSET}" }, "env", secrets)).toEqual({
      ok: false,
      error: "env.Y uses ${UNSET}, which is not set in the runner's environment",
    });
  });
});

describe("StderrTail", () => {
  it("keeps the last lines, cut to length, across chunk boundaries", () => {
    const tail = new StderrTail(3, 10);
    tail.push("one\ntw");
    tail.push("o\n\nthree\nfour\n");
    tail.push("a very long line indeed\nunfinished");
    expect(tail.lines()).toEqual(["four", "a very lon…", "unfinished"]);
    expect(tail.note(2)).toBe(" — last stderr: a very lon… | unfinished");
    expect(new StderrTail().note()).toBe("");
  });
});
