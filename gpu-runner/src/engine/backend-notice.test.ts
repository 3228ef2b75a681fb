import { describe, expect, it } from "vitest";
import { backendNotice, engineNotices, SLOW_SAMPLING } from "./backend-notice";

const health = (backend: unknown, device: unknown) => ({ status: "ok", backend, device, model: "m", max_context_tokens: 512 });

describe("backendNotice: a GPU sampling without vLLM", () => {
  it("a CUDA engine on transformers gets the slow-sampling notice, saying how to install vLLM", () => {
    for (const device of ["cuda", "cuda:0", "cuda:3"]) {
      const notice = backendNotice(health("transformers", device));
      expect(notice?.kind).toBe(SLOW_SAMPLING);
      expect(notice?.message).toContain("ROLLBOOK_BACKEND=vllm bash scripts/setup.sh");
      expect(notice?.message).toContain("transformers backend");
      expect(notice?.message).toContain("docs/deploy.md");
    }
    expect(engineNotices(health("transformers", "cuda:0"))).toEqual([backendNotice(health("transformers", "cuda:0"))]);
  });

  it("no notice for vLLM on CUDA, transformers on a CPU, no backend yet, or a body without those fields", () => {
    expect(backendNotice(health("vllm", "cuda:0"))).toBeNull();
    expect(backendNotice(health("transformers", "cpu"))).toBeNull();
    expect(backendNotice(health("none", "cuda"))).toBeNull(); // the model is still loading
    expect(backendNotice(health("none", "cpu"))).toBeNull();
    expect(backendNotice(health(undefined, "cuda:0"))).toBeNull();
    expect(backendNotice(health("transformers", undefined))).toBeNull();
    expect(backendNotice(health("transformers", 0))).toBeNull();
    expect(backendNotice(null)).toBeNull();
    expect(backendNotice(undefined)).toBeNull();
    expect(backendNotice("cuda transformers")).toBeNull();
    expect(engineNotices(health("vllm", "cuda:0"))).toEqual([]);
  });
});
