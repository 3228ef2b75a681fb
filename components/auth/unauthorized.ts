"use client";
/** Any API answer "UNAUTHORIZED" (signed out, session expired or revoked) sends the page to sign-in, then back. */
import { TRPCClientError } from "@trpc/client";

/** Pages a signed-out visitor may see: they must never bounce to sign-in. */
export function isPublicPath(pathname: string): boolean {
  return pathname === "/sign-in" || pathname.startsWith("/invite/");
}

export function redirectIfUnauthorized(error: unknown): void {
  if (typeof window === "undefined") return;
  if (!(error instanceof TRPCClientError)) return;
  const code = (error.data as { code?: string } | undefined)?.code;
  if (code !== "UNAUTHORIZED" || isPublicPath(window.location.pathname)) return;
  const next = window.location.pathname + window.location.search;
  window.location.assign(`/sign-in?next=${encodeURIComponent(next)}`);
}
