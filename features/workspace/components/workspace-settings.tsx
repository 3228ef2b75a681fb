"use client";
/** /settings/workspace: the active workspace's members and roles, invite links, rename, leave, runners, secrets, MCP servers, alert webhook. */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { grantableRoles, type Role } from "@/contracts/roles";
import { can } from "@/contracts/actions";
import { useTRPC } from "@/components/trpc";
import { Button, ErrorBox, Spinner } from "@/components/ui/primitives";
import { fmtAgo, fmtDateTime } from "@/components/ui/format";
import { WebhookSettings } from "@/features/flags";
import { RunnersSettings } from "@/features/runners";
import { McpServersSettings } from "./mcp-servers-settings";
import { SecretsSettings } from "./secrets-settings";

function InviteLinks({ role }: { role: Role }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const invites = useQuery(trpc.workspace.invites.queryOptions());
  const [inviteRole, setInviteRole] = useState<Role>("member");
  const [days, setDays] = useState<1 | 7 | 30>(7);
  const [link, setLink] = useState<string | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.workspace.invites.queryKey() });
  const create = useMutation(
    trpc.workspace.createInvite.mutationOptions({
      onSuccess: (inv) => {
        setLink(`${window.location.origin}${inv.path}`);
        void refresh();
      },
    }),
  );
  const revoke = useMutation(trpc.workspace.revokeInvite.mutationOptions({ onSuccess: () => void refresh() }));
  return (
    <section className="flex flex-col gap-2">
      <h2 className="font-medium text-zinc-100">Invite by link</h2>
      <div className="flex items-center gap-2">
        <label className="flex items-center gap-1">
          Role
          <select
            aria-label="Invite role"
            className="h-7 rounded border border-zinc-700 bg-zinc-900 px-1"
            value={inviteRole}
            onChange={(e) => setInviteRole(e.target.value as Role)}
          >
            {grantableRoles(role).map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <label className="flex items-center gap-1">
          Expires in
          <select
            aria-label="Invite expiry"
            className="h-7 rounded border border-zinc-700 bg-zinc-900 px-1"
            value={days}
            onChange={(e) => setDays(Number(e.target.value) as 1 | 7 | 30)}
          >
            <option value={1}>1 day</option>
            <option value={7}>7 days</option>
            <option value={30}>30 days</option>
          </select>
        </label>
        <Button onClick={() => create.mutate({ role: inviteRole, days })} disabled={create.isPending}>
          Create invite link
        </Button>
      </div>
      {create.error && <p className="text-red-300">{create.error.message}</p>}
      {link && (
        <div className="rounded border border-amber-700 bg-amber-950/40 p-2">
          <p className="text-amber-200">Send this link (single use; shown once):</p>
          <code data-testid="invite-link" className="break-all text-zinc-100 select-all">
            {link}
          </code>
        </div>
      )}
      {invites.data && invites.data.length > 0 && (
        <ul className="flex flex-col gap-1">
          {invites.data.map((i) => (
            <li key={i.id} className="flex items-center gap-2">
              <span>
                {i.role} invite by {i.createdBy.name}, expires {fmtDateTime(i.expiresAt)}
              </span>
              <Button variant="ghost" onClick={() => revoke.mutate({ id: i.id })}>
                Revoke
              </Button>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

export function WorkspaceSettings() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const current = useQuery(trpc.workspace.current.queryOptions());
  const me = useQuery(trpc.account.me.queryOptions());
  const members = useQuery(trpc.workspace.members.queryOptions());
  const [error, setError] = useState<string | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.workspace.members.queryKey() });
  const setRole = useMutation(trpc.workspace.setRole.mutationOptions({ onSuccess: () => void refresh(), onError: (e) => setError(e.message) }));
  const remove = useMutation(trpc.workspace.removeMember.mutationOptions({ onSuccess: () => void refresh(), onError: (e) => setError(e.message) }));
  const leave = useMutation(trpc.workspace.leave.mutationOptions({ onSuccess: () => window.location.assign("/"), onError: (e) => setError(e.message) }));
  const rename = useMutation(trpc.workspace.rename.mutationOptions({ onSuccess: () => void qc.invalidateQueries(), onError: (e) => setError(e.message) }));
  const [name, setName] = useState<string | null>(null);

  if (current.isPending) return <Spinner label="Loading the workspace" />;
  if (current.error) return <ErrorBox title="Workspace">{current.error.message}</ErrorBox>;
  const role = current.data.role;
  // Each control asks the action table (contracts/actions.ts), the same roles the server's procedures declare.
  const canRename = can(role, "workspace.rename");
  return (
    <div className="flex max-w-4xl flex-col gap-6 p-6 text-[13px] text-zinc-300">
      <div className="flex items-center gap-3">
        {canRename && name !== null ? (
          <form
            className="flex items-center gap-2"
            onSubmit={(e) => {
              e.preventDefault();
              rename.mutate({ name });
              setName(null);
            }}
          >
            <input aria-label="Workspace name" className="h-8 rounded border border-zinc-700 bg-zinc-950 px-2" value={name} onChange={(e) => setName(e.target.value)} />
            <Button type="submit">Save</Button>
          </form>
        ) : (
          <h1 className="text-lg font-semibold text-zinc-100">{current.data.name}</h1>
        )}
        <span className="text-zinc-500">you are {role}</span>
        {canRename && name === null && (
          <Button variant="ghost" onClick={() => setName(current.data.name)}>
            Rename
          </Button>
        )}
        {role !== "owner" && can(role, "workspace.leave") && (
          <Button variant="ghost" onClick={() => leave.mutate()}>
            Leave workspace
          </Button>
        )}
      </div>
      {error && (
        <p role="alert" className="text-red-300">
          {error}
        </p>
      )}
      <section className="flex flex-col gap-2">
        <h2 className="font-medium text-zinc-100">Members</h2>
        <table className="w-full text-left">
          <thead className="text-zinc-500">
            <tr>
              <th className="py-1 font-normal">Name</th>
              <th className="font-normal">Email</th>
              <th className="font-normal">Role</th>
              <th className="font-normal">Joined</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {members.data?.map((m) => {
              const editable = can(role, "member.changeRole") && m.role !== "owner" && m.user.id !== me.data?.id && grantableRoles(role).includes(m.role);
              return (
                <tr key={m.user.id} className="border-t border-zinc-800" data-testid="member-row">
                  <td className="py-1">{m.user.name}</td>
                  <td>{m.user.email}</td>
                  <td>
                    {editable ? (
                      <select
                        aria-label={`Role of ${m.user.email}`}
                        className="h-7 rounded border border-zinc-700 bg-zinc-900 px-1"
                        value={m.role}
                        onChange={(e) => setRole.mutate({ userId: m.user.id, role: e.target.value as Role })}
                      >
                        {grantableRoles(role).map((r) => (
                          <option key={r} value={r}>
                            {r}
                          </option>
                        ))}
                      </select>
                    ) : (
                      m.role
                    )}
                  </td>
                  <td>{fmtAgo(m.createdAt)}</td>
                  <td className="text-right">
                    {editable && can(role, "member.remove") && (
                      <Button variant="ghost" onClick={() => remove.mutate({ userId: m.user.id })}>
                        Remove
                      </Button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </section>
      {can(role, "member.invite") && <InviteLinks role={role} />}
      <RunnersSettings admin={can(role, "runner.manage")} />
      <SecretsSettings admin={can(role, "secret.manage")} />
      <McpServersSettings admin={can(role, "mcpServer.manage")} />
      {can(role, "webhook.manage") && <WebhookSettings />}
    </div>
  );
}
