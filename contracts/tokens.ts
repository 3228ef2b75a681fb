/**
 * The shared secrets between the web server, the runner and the engine, written once for both Node
 * processes: what to say when RUNNER_TOKEN is missing, and when a token is too short to resist guessing.
 * (Fresh tokens: gpu-runner/src/tokens.ts, and scripts/lib.sh for `npm start`.)
 */

/** Shorter tokens still work (8 is the floor) but are warned about at start. */
export const STRONG_TOKEN_CHARS = 32;

export const RUNNER_TOKEN_MISSING =
  "RUNNER_TOKEN is not set. `npm start` (and `npm run setup`) generate one into $DATA_DIR/runner-token (.data/runner-token) " +
  "and give it to both the web server and the runner; when you start them yourself, set the same RUNNER_TOKEN for both " +
  "(e.g. RUNNER_TOKEN=$(cat .data/runner-token)).";

/** A warning for a token shorter than STRONG_TOKEN_CHARS, or null. Never includes the token. */
export function weakTokenWarning(name: string, token: string): string | null {
  if (token.length >= STRONG_TOKEN_CHARS) return null;
  return `${name} is only ${token.length} characters: use at least ${STRONG_TOKEN_CHARS} random ones (openssl rand -hex 32), or unset it and let \`npm start\` generate one`;
}
