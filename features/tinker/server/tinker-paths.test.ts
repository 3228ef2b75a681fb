/**
 * The names a Tinker client hands back (tinker:// paths, sampling session ids, base model names) against the
 * shared corpus of hostile spellings (contracts/fixtures/identifiers.jsonl): a run id the shared grammar
 * refuses is never read out of a path or a session, and no model spelling but a plain base model name is
 * ever taken as `base_model` — a checkpoint is reached only through a path or session of this workspace.
 */
import { describe, expect, it } from "vitest";
import { identifierCorpus, modelSpellings } from "@contracts/fixtures/identifier-corpus";
import { TinkerUserError } from "./tinker-futures";
import { baseModelName, parseSamplingSession, parseWeightsPath, samplingSessionId, weightsName, weightsPath } from "./tinker-paths";

const runIds = identifierCorpus().filter((l): l is Extract<typeof l, { kind: "run_id" }> => l.kind === "run_id");
const session = (value: unknown) => `tss.${Buffer.from(JSON.stringify(value)).toString("base64url")}`;
const refusal = (fn: () => unknown): TinkerUserError => {
  try {
    fn();
  } catch (e) {
    if (e instanceof TinkerUserError) return e;
    throw e;
  }
  throw new Error("not refused");
};

describe("Tinker paths and sessions read only what Rollbook wrote", () => {
  it("round-trips its own paths and sessions", () => {
    expect(parseWeightsPath(weightsPath("rabc", "state", "final"), "path")).toEqual({ runId: "rabc", kind: "state", name: "final" });
    expect(parseWeightsPath(weightsPath("rabc", "sampler", "000001"), "model_path")).toEqual({ runId: "rabc", kind: "sampler", name: "000001" });
    expect(parseSamplingSession(samplingSessionId({ run: "rabc", step: 3 }))).toEqual({ run: "rabc", step: 3 });
    expect(parseSamplingSession(samplingSessionId({ base: "SmolLM2-135M-Instruct" }))).toEqual({ base: "SmolLM2-135M-Instruct" });
  });

  it("every run id spelling of the corpus: accepted in a path and a session exactly when the shared grammar accepts it", () => {
    expect(runIds.length).toBeGreaterThan(10);
    for (const { input, ok, why } of runIds) {
      const path = `tinker://${input}/weights/final`;
      if (ok) {
        expect(parseWeightsPath(path, "path").runId, why).toBe(input);
        expect(parseSamplingSession(session({ r: input, s: 1 })), why).toEqual({ run: input, step: 1 });
      } else {
        expect(refusal(() => parseWeightsPath(path, "path")).field, why).toBe("path");
        expect(refusal(() => parseSamplingSession(session({ r: input, s: 1 }))).field, why).toBe("sampling_session_id");
      }
    }
  });

  it("every model spelling of the corpus but a base model name is refused as base_model (checkpoints, hostile forms)", () => {
    for (const { input, verdict, why } of modelSpellings("rb0000000000000000000000000000000")) {
      if (verdict === "base") expect(baseModelName(input, "base_model"), why).toBe(input);
      else expect(refusal(() => baseModelName(input, "base_model")).field, why).toBe("base_model");
      // The same through a crafted sampling session: a session never names a checkpoint as its "base".
      if (verdict !== "base") expect(refusal(() => parseSamplingSession(session({ b: input }))).field, why).toBe("sampling_session_id");
    }
  });

  it("names are plain: no separators, dots-only, control characters or unbounded lengths", () => {
    for (const bad of ["", ".", "..", "a/b", "a\\b", "a\u0000", "x".repeat(129), "ok\n", "../../etc"]) expect(refusal(() => weightsName(bad, "path")).field).toBe("path");
    for (const bad of ["tinker://r1/weights/a/b", "tinker://r1/other/a", "file:///etc/passwd", "tinker://r1/weights/..", "tss.", "tss.!!!", session({ r: "r1", s: -1 }), session({ r: "r1", s: 1.5 })]) {
      expect(() => (bad.startsWith("tss.") ? parseSamplingSession(bad) : parseWeightsPath(bad, "path"))).toThrow(TinkerUserError);
    }
  });
});
