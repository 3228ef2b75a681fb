/**
 * Who operates this Rollbook instance: the accounts trusted with the instance's runners as they are — their
 * addresses, engine health and memory, error texts (which name the address), checkpoint paths on their disks,
 * and the engine queue every workspace shares (docs/security.md, "Who is trusted").
 *
 * "Workspace admin" cannot be that line: every sign-up owns a workspace of its own (accounts.ts), so on a
 * shared instance any new account is an admin somewhere. The operator is:
 *   - the accounts whose emails ROLLBOOK_OPERATOR_EMAILS lists (server/env.ts), when it is set; else
 *   - the owner of the default workspace: the first account, the one the one-form first setup makes (it claims
 *     the default workspace, accounts.ts onUserCreated), i.e. whoever installed the instance.
 * Decided per call from the database and the environment, never cached in a session: a changed setting or an
 * ownership moved away takes effect on the next request.
 */
import { env } from "@/server/env";
import type { DbOrTx } from "@/server/db-types";
import { DEFAULT_WORKSPACE_SLUG } from "./default-workspace";

export async function isInstanceOperator(db: DbOrTx, user: { id: string; email: string }): Promise<boolean> {
  const listed = env().ROLLBOOK_OPERATOR_EMAILS;
  if (listed.length > 0) return listed.includes(user.email.trim().toLowerCase());
  const owner = await db.membership.findFirst({ where: { userId: user.id, role: "owner", workspace: { slug: DEFAULT_WORKSPACE_SLUG } }, select: { userId: true } });
  return owner !== null;
}
