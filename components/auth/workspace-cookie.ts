"use client";
/** Switches the workspace the browser acts in (the server checks membership on every request) and reloads. */
import { WORKSPACE_COOKIE } from "@/contracts/cookies";

export function switchWorkspace(workspaceId: string, to = "/"): void {
  document.cookie = `${WORKSPACE_COOKIE}=${encodeURIComponent(workspaceId)}; path=/; max-age=${60 * 60 * 24 * 365}; samesite=lax`;
  // A full load: every cached query belongs to the old workspace.
  window.location.assign(to);
}
