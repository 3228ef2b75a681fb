/**
 * The browser's action table (contracts/actions.ts) against the server's own declarations: every procedure an
 * action names exists in the router and declares exactly the action's role (its builder's meta.access), so a
 * control the UI offers to a role is never one the server refuses it, and a procedure whose role changes
 * fails here until the table follows.
 *   npx vitest run --project server server/auth/action-roles.servertest.ts
 */
import { describe, expect, it } from "vitest";
import { appRouter } from "../routers/_app";
import { ACTIONS, type Action } from "@contracts/actions";
import type { Access } from "@contracts/roles";

type Procedure = { _def: { meta?: { access?: Access } } };
const procedures = appRouter._def.procedures as unknown as Record<string, Procedure>;

describe("the UI's action table matches the server's procedure roles", () => {
  for (const [action, rule] of Object.entries(ACTIONS) as [Action, (typeof ACTIONS)[Action]][]) {
    it(action, () => {
      for (const path of rule.procedures) {
        expect(procedures[path], `${action}: no procedure ${path}`).toBeDefined();
        expect(procedures[path]!._def.meta?.access, `${action}: ${path}'s declared role`).toBe(rule.role);
      }
    });
  }

  it("names each procedure under one action only", () => {
    const seen = new Map<string, string>();
    for (const [action, rule] of Object.entries(ACTIONS)) {
      for (const path of rule.procedures) {
        expect(seen.get(path), `${path} is under ${seen.get(path)} and ${action}`).toBeUndefined();
        seen.set(path, action);
      }
    }
  });

  it("covers every mutation a role below owner could be offered", () => {
    // Mutations that are no workspace action (account-level, public) are listed here on purpose.
    const notActions = new Set(["account.createWorkspace", "account.acceptInvite"]);
    const covered = new Set(Object.values(ACTIONS).flatMap((r) => r.procedures as readonly string[]));
    const missing = Object.entries(procedures as unknown as Record<string, { _def: { type: string; meta?: { access?: Access } } }>)
      .filter(([path, p]) => p._def.type === "mutation" && !notActions.has(path) && !covered.has(path))
      .map(([path]) => path);
    expect(missing).toEqual([]);
  });
});
