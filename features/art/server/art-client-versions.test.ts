import { afterEach, describe, expect, it } from "vitest";
import { resetEnv } from "@/server/env";
import { openai3Problem } from "./art-client-versions";

const req = (headers: Record<string, string>) => new Request("http://x/api/art/v1/preview/models", { method: "POST", headers });

describe("openai3Problem", () => {
  afterEach(() => {
    delete process.env.ART_ALLOW_OPENAI3;
    resetEnv();
  });
  it("names the fix for ART's client on openai 3 (its User-Agent and X-Stainless-Package-Version)", () => {
    const problem = openai3Problem(req({ "user-agent": "Client/Python 3.0.1", "x-stainless-package-version": "3.0.1" }));
    expect(problem).toContain('pip install "openai>=2,<3"');
    expect(problem).toContain("openai 3.0.1");
  });
  it("lets ART's client on openai 2, and any other client, through", () => {
    expect(openai3Problem(req({ "user-agent": "Client/Python 2.8.0", "x-stainless-package-version": "2.8.0" }))).toBeNull();
    expect(openai3Problem(req({ "user-agent": "AsyncOpenAI/Python 3.0.1", "x-stainless-package-version": "3.0.1" }))).toBeNull();
    expect(openai3Problem(req({ "user-agent": "curl/8" }))).toBeNull();
  });
  it("is off with ART_ALLOW_OPENAI3=true", () => {
    process.env.ART_ALLOW_OPENAI3 = "true";
    resetEnv();
    expect(openai3Problem(req({ "user-agent": "Client/Python 3.0.1", "x-stainless-package-version": "3.0.1" }))).toBeNull();
  });
});
