"use client";
/** Better Auth's browser client (same origin): sign up, sign in, sign out, change password. */
import { createAuthClient } from "better-auth/react";

export const authClient = createAuthClient();

/** Better Auth's error → one line for the form (429 says when to retry rather than "Too many requests"). */
export function authErrorMessage(error: { message?: string; status?: number; statusText?: string } | null | undefined): string {
  if (!error) return "Something went wrong";
  if (error.status === 429) return "Too many attempts from here: wait a minute and try again.";
  return error.message || error.statusText || "Something went wrong";
}
