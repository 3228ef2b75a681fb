"use client";
/** /settings: change password, API tokens (shown once, revocable, last use), sign out everywhere. */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { useTRPC } from "@/components/trpc";
import { Button, ErrorBox } from "@/components/ui/primitives";
import { fmtAgo } from "@/components/ui/format";
import { authClient, authErrorMessage } from "@/components/auth/auth-client";
import { TextField } from "@/components/ui/text-field";

function ChangePassword() {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  async function submit(e: FormEvent) {
    e.preventDefault();
    const res = await authClient.changePassword({ currentPassword: current, newPassword: next, revokeOtherSessions: true });
    if (res.error) return setMessage({ ok: false, text: authErrorMessage(res.error) });
    setCurrent("");
    setNext("");
    setMessage({ ok: true, text: "Password changed. Other sessions were signed out." });
  }
  return (
    <form onSubmit={(e) => void submit(e)} className="flex max-w-sm flex-col gap-2" aria-label="Change password">
      <h2 className="font-medium text-zinc-100">Password</h2>
      <TextField label="Current password" type="password" autoComplete="current-password" required value={current} onChange={(e) => setCurrent(e.target.value)} />
      <TextField label="New password (8+ characters)" type="password" autoComplete="new-password" minLength={8} required value={next} onChange={(e) => setNext(e.target.value)} />
      <Button type="submit" className="self-start">
        Change password
      </Button>
      {message && <p className={message.ok ? "text-emerald-300" : "text-red-300"}>{message.text}</p>}
    </form>
  );
}

function ApiTokens() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const tokens = useQuery(trpc.account.tokens.queryOptions());
  const [name, setName] = useState("");
  const [created, setCreated] = useState<string | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.account.tokens.queryKey() });
  const create = useMutation(
    trpc.account.createToken.mutationOptions({
      onSuccess: (t) => {
        setCreated(t.token);
        setName("");
        void refresh();
      },
    }),
  );
  const revoke = useMutation(trpc.account.revokeToken.mutationOptions({ onSuccess: () => void refresh() }));
  return (
    <section className="flex flex-col gap-2">
      <h2 className="font-medium text-zinc-100">API tokens</h2>
      <p className="text-zinc-400">
        For scripts, CI and the OpenAI-compatible endpoint (<code>/api/v1</code>): a token acts as you, in this workspace, with your role.
      </p>
      <form
        className="flex items-end gap-2"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate({ name });
        }}
      >
        <TextField label="Token name" placeholder="ci" value={name} onChange={(e) => setName(e.target.value)} />
        <Button type="submit" disabled={create.isPending}>
          Create token
        </Button>
      </form>
      {create.error && <p className="text-red-300">{create.error.message}</p>}
      {created && (
        <div className="rounded border border-amber-700 bg-amber-950/40 p-2" data-testid="new-token">
          <p className="text-amber-200">Copy it now: it is not shown again.</p>
          <code className="break-all text-zinc-100 select-all">{created}</code>
        </div>
      )}
      {tokens.error && <ErrorBox title="Tokens">{tokens.error.message}</ErrorBox>}
      <table className="w-full max-w-3xl text-left">
        <thead className="text-zinc-500">
          <tr>
            <th className="py-1 font-normal">Name</th>
            <th className="font-normal">Token</th>
            <th className="font-normal">Created</th>
            <th className="font-normal">Last used</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {tokens.data?.map((t) => (
            <tr key={t.id} className="border-t border-zinc-800">
              <td className="py-1">{t.name}</td>
              <td>
                <code>{t.prefix}…</code>
              </td>
              <td>{fmtAgo(t.createdAt)}</td>
              <td>{t.lastUsedAt ? fmtAgo(t.lastUsedAt) : "never"}</td>
              <td className="text-right">
                {t.revokedAt ? (
                  <span className="text-zinc-500">revoked</span>
                ) : (
                  <Button variant="ghost" onClick={() => revoke.mutate({ id: t.id })}>
                    Revoke
                  </Button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function AccountSettings() {
  const trpc = useTRPC();
  const me = useQuery(trpc.account.me.queryOptions());
  return (
    <div className="flex max-w-4xl flex-col gap-6 p-6 text-[13px] text-zinc-300">
      <h1 className="text-lg font-semibold text-zinc-100">Account</h1>
      {me.data && (
        <p>
          {me.data.name} · {me.data.email}
        </p>
      )}
      <ChangePassword />
      <ApiTokens />
    </div>
  );
}
