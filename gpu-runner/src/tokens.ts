/**
 * Fresh secrets for the runner: the engine token it gives an engine it spawns when none is configured.
 * (What a token must be, and the messages about it: contracts/tokens.ts.)
 */
import { randomBytes } from "node:crypto";

/** 32 random bytes as 64 hex characters (the same shape scripts/lib.sh generates). */
export function randomToken(): string {
  return randomBytes(32).toString("hex");
}
