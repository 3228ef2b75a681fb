/**
 * Rollbook's own cookies (not secrets: the server checks membership and invites itself), their names shared
 * by the server and the browser, and the one parser the server reads them with. No imports: the browser
 * bundles this file.
 */

/** The workspace the browser has switched to (server/auth/workspace-access.ts checks membership). */
export const WORKSPACE_COOKIE = "rollbook_workspace";
/** The same choice as a header, for scripts that use a session rather than an API token. */
export const WORKSPACE_HEADER = "x-rollbook-workspace";
/** The raw invite token, set by the invite page, so a sign-up from it may pass AUTH_DISABLE_SIGNUP. */
export const INVITE_COOKIE = "rollbook_invite";

/** One cookie's value from a Cookie header, or null. */
export function cookieValue(cookieHeader: string | null | undefined, name: string): string | null {
  for (const part of (cookieHeader ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === name) return decodeURIComponent(v.join("=")) || null;
  }
  return null;
}
