/**
 * The judges run inside the rollout sandbox: a bare V8 isolate with ES2022 and nothing else. This bundles
 * index.ts the way user code is bundled (esbuild, platform neutral, target es2022) and calls it in a
 * real isolated-vm isolate, so a stray Node or DOM API, or syntax newer than ES2022, fails here.
 */
import { readdirSync } from "node:fs";
import * as esbuild from "esbuild";
import ivm from "isolated-vm";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const DIR = new URL(".", import.meta.url).pathname;

async function bundle(): Promise<string> {
  const result = await esbuild.build({
    entryPoints: [`${DIR}index.ts`],
    bundle: true,
    write: false,
    format: "iife",
    globalName: "judges",
    platform: "neutral",
    target: "es2022",
    logLevel: "silent",
  });
  return result.outputFiles[0]?.text ?? "";
}

describe("judges in the sandbox", () => {
  it("type-check against the ES2022 library alone (no DOM, no Node, no ES2023 methods)", () => {
    const files = readdirSync(DIR)
      .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
      .map((f) => `${DIR}${f}`);
    const program = ts.createProgram(files, {
      lib: ["lib.es2022.d.ts"],
      types: [],
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      strict: true,
      noUncheckedIndexedAccess: true,
      noEmit: true,
      // The SDK's .d.ts (the message types) reaches zod's declarations, which mention URL: declaration
      // files are not what runs in the isolate, the judges' own code is.
      skipLibCheck: true,
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    expect(diagnostics).toEqual([]);
  });

  it("bundle with no imports and run in a bare isolate", async () => {
    const js = await bundle();
    expect(js).not.toMatch(/\brequire\(|\bprocess\.|\bglobalThis\.(?:document|window)\b/);
    const isolate = new ivm.Isolate({ memoryLimit: 32 });
    try {
      const context = await isolate.createContext();
      await (await isolate.compileScript(js)).run(context, { timeout: 1_000 });
      const probe = `JSON.stringify({
        exact: judges.exactMatch("**Paris.**", "paris"),
        regex: judges.regexFind("Answer: 3. Answer: 4.", "answer: (\\\\d+)").groups[0],
        math: judges.mathEqual(judges.extractAnswer("so $\\\\boxed{\\\\frac{1}{2}}$"), 0.5),
        big: judges.mathEqual("1,000,000,000,000,000,000,000,000,000,001", "1e30"),
        judge: judges.parseJudgeScore(judges.buildJudgeMessages({ task: "t", output: "o" })[0].content + "\\nSCORE: 0.5"),
        ruler: judges.parseRulerScores('{"scores":[{"trajectory_id":"2","score":0.1},{"trajectory_id":"1","score":0.9}]}', 2),
        prefix: judges.buildRulerMessages({ trajectories: [[{ role: "user", content: "q" }, { role: "assistant", content: "a" }], [{ role: "user", content: "q" }]] }).length,
      })`;
      const out = (await context.eval(probe, { timeout: 1_000 })) as string;
      expect(JSON.parse(out)).toEqual({ exact: true, regex: "4", math: true, big: false, judge: 0.5, ruler: [0.9, 0.1], prefix: 2 });
    } finally {
      isolate.dispose();
    }
  });
});
