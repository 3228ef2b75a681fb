/**
 * The secret that signs session cookies: AUTH_SECRET, or — so a fresh install needs no configuration — a
 * random one generated once and kept (mode 0600) in DATA_DIR/auth-secret. Several web servers sharing a
 * database must share AUTH_SECRET.
 */
import fs from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";

export function authSecret(opts: { configured?: string; dataDir: string }): string {
  if (opts.configured) return opts.configured;
  const file = path.resolve(opts.dataDir, "auth-secret");
  try {
    const existing = fs.readFileSync(file, "utf8").trim();
    if (existing.length >= 32) return existing;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const secret = randomBytes(32).toString("base64url");
  // "wx": two processes starting at once — the loser reads the winner's secret.
  try {
    fs.writeFileSync(file, secret + "\n", { mode: 0o600, flag: "wx" });
    return secret;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return fs.readFileSync(file, "utf8").trim();
    throw e;
  }
}
