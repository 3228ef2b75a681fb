/** Path settings resolve from the repository, never from the process's cwd (contracts/repo-path.ts). */
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { REPO_ROOT, repoPath } from "./repo-path";

const cwd = process.cwd();
afterEach(() => process.chdir(cwd));

describe("repoPath", () => {
  it("is the repository's folder holding package.json", () => {
    expect(path.basename(path.join(REPO_ROOT, "contracts"))).toBe("contracts");
    expect(repoPath("package.json")).toBe(path.join(REPO_ROOT, "package.json"));
  });

  it("resolves a relative setting from the repository whatever the cwd", () => {
    process.chdir(path.join(REPO_ROOT, "gpu-runner"));
    expect(repoPath(".data")).toBe(path.join(REPO_ROOT, ".data"));
    expect(repoPath("gpu-runner/engine/.venv/bin/python")).toBe(path.join(REPO_ROOT, "gpu-runner/engine/.venv/bin/python"));
  });

  it("keeps absolute paths and expands ~/ as the shell does", () => {
    expect(repoPath("/srv/rollbook/runs")).toBe("/srv/rollbook/runs");
    expect(repoPath("~/.cache/rollbook/models")).toBe(path.join(os.homedir(), ".cache/rollbook/models"));
  });
});
