/**
 * Replays the flag corpus (bench/flag-corpus/runs: the rule input of real runs, built by bench/flag-corpus.ts):
 * every healthy run raises no warning or critical flag, every seeded pathology raises its own.
 *   npx vitest run --project unit features/flags/server/detect/corpus.test.ts
 */
import { describe, expect, it } from "vitest";
import { judge, readCorpus } from "./corpus";

const corpus = readCorpus();

describe("the flag corpus", () => {
  it("has healthy runs of several templates and every seeded pathology", () => {
    const healthy = corpus.filter((e) => e.label === "healthy");
    expect(new Set(healthy.map((e) => e.source.template)).size).toBeGreaterThanOrEqual(2);
    expect(new Set(corpus.map((e) => e.label))).toEqual(new Set(["healthy", "reward_collapse", "reward_hacking", "kl_blowup", "exception_rate"]));
  });

  for (const entry of corpus) {
    it(`${entry.name} (${entry.label}) raises ${entry.label === "healthy" ? "no warning" : entry.label}`, () => {
      const j = judge(entry);
      const raised = j.flags.map((f) => `${f.rule}/${f.severity}@${f.firstStep}: ${f.message}`);
      if (entry.label === "healthy") expect(j.alerted, raised.join("\n")).toEqual([]);
      else expect(j.alerted, raised.join("\n")).toContain(entry.label);
    });
  }
});
