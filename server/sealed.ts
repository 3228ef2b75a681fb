/**
 * Values the web server must be able to read back but never keep in the clear (runner tokens, workspace
 * secrets): AES-256-GCM with a key derived (HKDF-SHA256) from the server's secret (server/auth/secret.ts:
 * AUTH_SECRET, or the generated DATA_DIR/auth-secret), which web servers sharing a database already must
 * share. Each use has its own key (`purpose`), and a sealed value can be bound to where it belongs (`bound`,
 * authenticated but not stored: a workspace secret's workspace and name), so a cipher copied to another row
 * does not open. node:crypto is the well-kept library here; the format is ours:
 * "v1." + base64url(iv 12 B | tag 16 B | ciphertext).
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { authSecret } from "./auth/secret";
import { env } from "./env";

export type SealPurpose = "rollbook runner tokens v1" | "rollbook workspace secrets v1";

function key(purpose: SealPurpose, secret?: string): Buffer {
  const s = secret ?? authSecret({ configured: env().AUTH_SECRET, dataDir: env().DATA_DIR });
  return Buffer.from(hkdfSync("sha256", s, "rollbook", purpose, 32));
}

export function seal(plain: string, purpose: SealPurpose, opts: { secret?: string; bound?: string } = {}): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key(purpose, opts.secret), iv);
  if (opts.bound !== undefined) cipher.setAAD(Buffer.from(opts.bound, "utf8"));
  const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
  return `v1.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url")}`;
}

/** The value, or null when it cannot be opened here (another secret, another binding, or tampered with). */
export function unseal(stored: string, purpose: SealPurpose, opts: { secret?: string; bound?: string } = {}): string | null {
  if (!stored.startsWith("v1.")) return null;
  const raw = Buffer.from(stored.slice(3), "base64url");
  if (raw.length < 29) return null;
  try {
    const decipher = createDecipheriv("aes-256-gcm", key(purpose, opts.secret), raw.subarray(0, 12));
    if (opts.bound !== undefined) decipher.setAAD(Buffer.from(opts.bound, "utf8"));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
  } catch {
    return null;
  }
}
