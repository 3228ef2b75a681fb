/**
 * What each user-facing action needs — one table for the browser (a control the role may not use is hidden
 * or disabled, saying which role it needs) and the server (server/auth/action-roles.servertest.ts checks that
 * every procedure an action calls declares exactly this role, so the two cannot drift). Plain data only.
 *
 * `procedures` are the tRPC paths the action's controls call; the server's own declaration (its builder,
 * server/trpc.ts) stays the authority: this table is checked against it, never trusted by it.
 */
import { roleAtLeast, type Role } from "./roles";

interface ActionRule {
  role: Role;
  procedures: readonly string[];
}

export const ACTIONS = {
  // Experiments
  "experiment.create": { role: "member", procedures: ["experiments.create", "experiments.createFromTemplate"] },
  /** Edit files (type, new file, rename, delete, import tasks), Save and Check. */
  "experiment.edit": { role: "member", procedures: ["experiments.save", "experiments.validate"] },
  "experiment.rename": { role: "member", procedures: ["experiments.rename"] },
  "experiment.duplicate": { role: "member", procedures: ["experiments.duplicate"] },
  "experiment.archive": { role: "member", procedures: ["experiments.setArchived"] },
  "experiment.restoreVersion": { role: "member", procedures: ["experiments.restore"] },
  "experiment.delete": { role: "admin", procedures: ["experiments.delete"] },
  // Runs
  /** Dry run, Eval, Train, Eval checkpoint, a fork started from the editor. */
  "run.start": { role: "member", procedures: ["runs.start"] },
  "run.stop": { role: "member", procedures: ["runs.stop"] },
  "run.resume": { role: "member", procedures: ["runs.resume"] },
  "run.fork": { role: "member", procedures: ["runs.fork"] },
  "run.rescore": { role: "member", procedures: ["runs.rescore"] },
  "run.editTagsNotes": { role: "member", procedures: ["runs.update"] },
  "checkpoint.chat": { role: "viewer", procedures: ["checkpoints.chat"] },
  /** Delete a checkpoint that is not the run's newest (the Checkpoints panel). */
  "checkpoint.delete": { role: "member", procedures: ["checkpoints.delete"] },
  "flags.markRead": { role: "viewer", procedures: ["flags.markRead"] },
  // People and the workspace
  "workspace.rename": { role: "owner", procedures: ["workspace.rename"] },
  "workspace.leave": { role: "viewer", procedures: ["workspace.leave"] },
  "member.invite": { role: "admin", procedures: ["workspace.invites", "workspace.createInvite", "workspace.revokeInvite"] },
  "member.changeRole": { role: "admin", procedures: ["workspace.setRole"] },
  "member.remove": { role: "admin", procedures: ["workspace.removeMember"] },
  "token.manage": { role: "viewer", procedures: ["account.tokens", "account.createToken", "account.revokeToken"] },
  // Settings
  "webhook.manage": { role: "admin", procedures: ["flags.webhook", "flags.setWebhook", "flags.removeWebhook", "flags.deliveries"] },
  "runner.manage": { role: "admin", procedures: ["runners.register", "runners.update", "runners.remove"] },
  "secret.manage": { role: "admin", procedures: ["secrets.set", "secrets.remove"] },
  "mcpServer.manage": { role: "admin", procedures: ["mcpServers.set", "mcpServers.remove"] },
} as const satisfies Record<string, ActionRule>;

export type Action = keyof typeof ACTIONS;

/** The role an action needs. */
export function roleFor(action: Action): Role {
  return ACTIONS[action].role;
}

/** Whether `role` may do `action`; null (not known yet, or not a member) may do nothing. */
export function can(role: Role | null | undefined, action: Action): boolean {
  return role != null && roleAtLeast(role, ACTIONS[action].role);
}

/** A disabled control's title: which role the action needs (not "needs the … role": that is the server's refusal). */
export function requiresRoleTitle(role: Role | null | undefined, action: Action): string {
  const needed = ACTIONS[action].role;
  return role ? `Requires the ${needed} role (you are a ${role})` : `Requires the ${needed} role`;
}
