"use client";
/** The top bar's right side: the workspace switcher and the signed-in user's menu. */
import { useMutation, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "@/components/trpc";
import { authClient } from "@/components/auth/auth-client";
import { switchWorkspace } from "@/components/auth/workspace-cookie";

export function UserMenu() {
  const trpc = useTRPC();
  const me = useQuery(trpc.account.me.queryOptions());
  const workspaces = useQuery(trpc.account.workspaces.queryOptions());
  const current = useQuery(trpc.workspace.current.queryOptions());
  const create = useMutation(
    trpc.account.createWorkspace.mutationOptions({
      onSuccess: (ws) => switchWorkspace(ws.id),
      onError: (e) => window.alert(e.message),
    }),
  );
  if (!me.data) return null;
  const NEW = "__new__";
  return (
    <div className="ml-auto flex items-center gap-3 text-[13px]">
      {workspaces.data && current.data && (
        <label className="flex items-center gap-1.5 text-zinc-400">
          <span className="sr-only">Workspace</span>
          <select
            aria-label="Workspace"
            data-testid="workspace-switcher"
            className="h-7 max-w-56 rounded border border-zinc-700 bg-zinc-900 px-1.5 text-zinc-200"
            value={current.data.id}
            onChange={(e) => {
              if (e.target.value !== NEW) return switchWorkspace(e.target.value);
              const name = window.prompt("Name of the new workspace")?.trim();
              if (name) create.mutate({ name });
              else e.target.value = current.data.id;
            }}
          >
            {workspaces.data.map((w) => (
              <option key={w.id} value={w.id}>
                {w.name} ({w.role})
              </option>
            ))}
            <option value={NEW}>+ New workspace…</option>
          </select>
        </label>
      )}
      <Link href="/settings/workspace" className="text-zinc-400 hover:text-zinc-200">
        Team
      </Link>
      <Link href="/settings" className="text-zinc-400 hover:text-zinc-200" title={me.data.email}>
        {me.data.name}
      </Link>
      <button
        type="button"
        className="text-zinc-500 hover:text-zinc-200"
        onClick={() => void authClient.signOut().then(() => window.location.assign("/sign-in"))}
      >
        Sign out
      </button>
    </div>
  );
}
