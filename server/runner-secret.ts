/**
 * Runner tokens at rest. The Runner row keeps a sha256 of the token (identity: "is this the token we
 * registered") AND the token encrypted with AES-256-GCM: every web process must be able to present the
 * token to the runner — after a restart, and on a second web server sharing the database — so a hash alone
 * cannot do, and plaintext in the database would hand every runner to whoever reads a backup.
 *
 * The key is derived (HKDF-SHA256) from the server's secret (server/auth/secret.ts: AUTH_SECRET, or the
 * generated DATA_DIR/auth-secret), which web servers sharing a database already must share. node:crypto is
 * the well-kept library here; the format is ours: "v1." + base64url(iv 12 B | tag 16 B | ciphertext).
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { authSecret } from "./auth/secret";
import { env } from "./env";

const INFO = "rollbook runner tokens v1";

function key(secret: string = authSecret({ configured: env().AUTH_SECRET, dataDir: env().DATA_DIR })): Buffer {
  return Buffer.from(hkdfSync("sha256", secret, "rollbook", INFO, 32));
}

export function encryptRunnerToken(token: string, secret?: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key(secret), iv);
  const body = Buffer.concat([cipher.update(token, "utf8"), cipher.final()]);
  return `v1.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url")}`;
}

/** The token, or null when it cannot be read with this server's secret (another secret, or tampered with). */
export function decryptRunnerToken(stored: string, secret?: string): string | null {
  if (!stored.startsWith("v1.")) return null;
  const raw = Buffer.from(stored.slice(3), "base64url");
  if (raw.length < 29) return null;
  try {
    const decipher = createDecipheriv("aes-256-gcm", key(secret), raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
  } catch {
    return null;
  }
}
