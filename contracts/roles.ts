/**
 * Workspace roles and what each may do — imported by the server (every procedure declares one) and by the
 * browser (to hide what a role cannot do; the server still refuses it). Types and plain data only.
 *
 *   viewer  reads everything in the workspace
 *   member  + creates and edits experiments; starts, stops, forks and re-scores runs; edits tags and notes
 *   admin   + invites and removes members, changes roles below owner, deletes experiments
 *   owner   + everything (the workspace's creator; one per workspace)
 */
import { z } from "zod";

export const ROLES = ["viewer", "member", "admin", "owner"] as const;
export const RoleName = z.enum(ROLES);
export type Role = z.infer<typeof RoleName>;

const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };

/** True when `role` can do what `needed` can. */
export function roleAtLeast(role: Role, needed: Role): boolean {
  return RANK[role] >= RANK[needed];
}

/** What a procedure needs: no credential, a signed-in user (any workspace), or a role in the active workspace. */
export type Access = "public" | "user" | Role;

/** The roles an inviter may hand out: never above their own, and owner is never invited. */
export function grantableRoles(inviter: Role): Role[] {
  return ROLES.filter((r) => r !== "owner" && roleAtLeast(inviter, "admin") && RANK[r] <= RANK[inviter]);
}
