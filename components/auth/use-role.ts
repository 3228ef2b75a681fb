"use client";
/** The caller's role in the active workspace, for hiding what it cannot do (the server refuses it anyway). */
import { useQuery } from "@tanstack/react-query";
import { roleAtLeast, type Role } from "@/contracts/roles";
import { useTRPC } from "../trpc";

export function useRole(): Role | null {
  const trpc = useTRPC();
  const current = useQuery(trpc.workspace.current.queryOptions());
  return current.data?.role ?? null;
}

/** True once the role is known to allow writing (member or above); false while loading. */
export function useCanWrite(): boolean {
  const role = useRole();
  return role !== null && roleAtLeast(role, "member");
}
