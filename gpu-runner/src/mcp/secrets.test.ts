import { describe, expect, it } from "vitest";
import { resolveSecretRefs } from "./secrets";
import { StderrTail } from "./stderr-tail";

describe("resolveSecretRefs", () => {
  const secrets = { values: { TOKEN: "t0k" } };

  it("fills every ${NAME} in place and leaves other text alone", () => {
    expect(resolveSecretRefs({ A: "${TOKEN}", B: "Bearer ${TOKEN}/${TOKEN}", C: "plain $TOKEN" }, "env", secrets)).toEqual({
      ok: true,
      values: { A: "t0k", B: "Bearer t0k/t0k", C: "plain $TOKEN" },
    });
  });

  it("names field and secret when the workspace has no such secret; the runner's environment is never consulted", () => {
    process.env.ROLLBOOK_TEST_ENV_ONLY = "from-env";
    expect(resolveSecretRefs({ X: "${ROLLBOOK_TEST_ENV_ONLY}" }, "headers", secrets)).toEqual({
      ok: false,
      error: "headers.X uses ${ROLLBOOK_TEST_ENV_ONLY}, which is not a secret of this workspace (an admin adds it in Team → Secrets)",
    });
    expect(resolveSecretRefs({ Y: "a${toString}" }, "env", secrets)).toMatchObject({ ok: false });
    delete process.env.ROLLBOOK_TEST_ENV_ONLY;
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
