import { describe, expect, it } from "vitest";
import { decryptRunnerToken, encryptRunnerToken } from "./runner-secret";

const SECRET = "a-server-secret-of-at-least-32-characters";

describe("runner tokens at rest (AES-256-GCM)", () => {
  it("round-trips, never stores the token in the clear, and differs each time (random IV)", () => {
    const a = encryptRunnerToken("the-runner-token-123", SECRET);
    const b = encryptRunnerToken("the-runner-token-123", SECRET);
    expect(a).not.toContain("the-runner-token-123");
    expect(a).not.toBe(b);
    expect(decryptRunnerToken(a, SECRET)).toBe("the-runner-token-123");
  });

  it("another secret or a changed byte reads as no token (null), never as a wrong one", () => {
    const stored = encryptRunnerToken("the-runner-token-123", SECRET);
    expect(decryptRunnerToken(stored, "another-secret-of-at-least-32-characters")).toBeNull();
    const raw = Buffer.from(stored.slice(3), "base64url");
    raw[raw.length - 1] = raw[raw.length - 1]! ^ 1;
    expect(decryptRunnerToken(`v1.${raw.toString("base64url")}`, SECRET)).toBeNull();
    expect(decryptRunnerToken("plain", SECRET)).toBeNull();
  });
});
