"use client";
/**
 * The caller's role in the active workspace, and what it allows (contracts/actions.ts: the server's own
 * table), for hiding or disabling what it cannot do. The server refuses it anyway.
 */
import { useQuery } from "@tanstack/react-query";
import { can, requiresRoleTitle, type Action } from "@/contracts/actions";
import type { Role } from "@/contracts/roles";
import { useTRPC } from "../trpc";

export function useRole(): Role | null {
  const trpc = useTRPC();
  const current = useQuery(trpc.workspace.current.queryOptions());
  return current.data?.role ?? null;
}

/** Whether the caller may do `action`; false while the role loads. */
export function useCan(action: Action): boolean {
  return can(useRole(), action);
}

/** Whether the caller may do `action`, and the title a disabled control shows (undefined when allowed). */
export function usePermission(action: Action): { allowed: boolean; title: string | undefined } {
  const role = useRole();
  const allowed = can(role, action);
  return { allowed, title: allowed ? undefined : requiresRoleTitle(role, action) };
}
