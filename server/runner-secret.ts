/**
 * Runner tokens at rest. The Runner row keeps a sha256 of the token (identity: "is this the token we
 * registered") AND the token sealed (server/sealed.ts): every web process must be able to present the
 * token to the runner — after a restart, and on a second web server sharing the database — so a hash alone
 * cannot do, and plaintext in the database would hand every runner to whoever reads a backup.
 */
import { seal, unseal } from "./sealed";

const PURPOSE = "rollbook runner tokens v1";

export function encryptRunnerToken(token: string, secret?: string): string {
  return seal(token, PURPOSE, { secret });
}

/** The token, or null when it cannot be read with this server's secret (another secret, or tampered with). */
export function decryptRunnerToken(stored: string, secret?: string): string | null {
  return unseal(stored, PURPOSE, { secret });
}
