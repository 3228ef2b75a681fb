/**
 * Which browser origins may call the API, sign in and open sockets: the public URL (AUTH_URL, or
 * http://HOST:PORT), its loopback twins (localhost ⇄ 127.0.0.1) and AUTH_TRUSTED_ORIGINS. A page on any other
 * origin — even another port of the same host, which SameSite cookies do not tell apart — is refused.
 */
import { env } from "../env";

function loopbackTwins(origin: string): string[] {
  try {
    const u = new URL(origin);
    if (u.hostname === "127.0.0.1" || u.hostname === "localhost") {
      return [`${u.protocol}//127.0.0.1${u.port ? `:${u.port}` : ""}`, `${u.protocol}//localhost${u.port ? `:${u.port}` : ""}`];
    }
    return [u.origin];
  } catch {
    return [];
  }
}

/** The URL users open: AUTH_URL, else http://HOST:PORT (0.0.0.0 read as 127.0.0.1). */
export function publicBaseUrl(): string {
  const e = env();
  return (e.AUTH_URL ?? `http://${e.HOST === "0.0.0.0" ? "127.0.0.1" : e.HOST}:${e.PORT}`).replace(/\/+$/, "");
}

export function trustedOrigins(_headers: Headers | null = null): string[] {
  const e = env();
  const base = publicBaseUrl();
  const extra = e.AUTH_TRUSTED_ORIGINS.split(",").map((s) => s.trim()).filter(Boolean);
  return [...new Set([base, ...extra].flatMap(loopbackTwins))];
}

/**
 * True when a request may proceed: no Origin header (not a browser's cross-origin request: curl, scripts,
 * server-side calls) or an Origin in the trusted list.
 */
export function originAllowed(origin: string | null | undefined): boolean {
  if (!origin) return true;
  return trustedOrigins().includes(origin.replace(/\/+$/, ""));
}
