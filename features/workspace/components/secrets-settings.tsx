"use client";
/**
 * The workspace's secrets (in /settings/workspace): names, who set each and when; admins add, replace and
 * delete them. A value is typed once and never shown again — not here, not in a run, not in a log.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "@/components/trpc";
import { Button } from "@/components/ui/primitives";
import { fmtAgo, fmtDateTime } from "@/components/ui/format";

export function SecretsSettings({ admin }: { admin: boolean }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const secrets = useQuery(trpc.secrets.list.queryOptions());
  const [name, setName] = useState("");
  const [value, setValue] = useState("");
  const [saved, setSaved] = useState<string | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.secrets.list.queryKey() });
  const save = useMutation(
    trpc.secrets.set.mutationOptions({
      onSuccess: (res) => {
        setSaved(res.name);
        setName("");
        setValue("");
        void refresh();
      },
    }),
  );
  const remove = useMutation(trpc.secrets.remove.mutationOptions({ onSuccess: () => void refresh() }));
  const issues = save.error?.data && "issues" in save.error.data ? (save.error.data.issues as string[] | null) : null;
  return (
    <section className="flex flex-col gap-2" data-testid="secrets-settings">
      <h2 className="font-medium text-zinc-100">Secrets</h2>
      <p className="text-zinc-500">
        API keys your experiments use by name: <code className="text-zinc-300">judge.api_key_secret</code> and{" "}
        <code className="text-zinc-300">{"${NAME}"}</code> in MCP headers and registered servers&apos; env. Stored encrypted; a value is never shown
        again, never stored with a run, and masked in run logs. Only the request that needs a secret gets it.
      </p>
      {secrets.data && secrets.data.length > 0 ? (
        <table className="w-full text-left">
          <thead className="text-zinc-500">
            <tr>
              <th className="py-1 font-normal">Name</th>
              <th className="font-normal">Set by</th>
              <th className="font-normal">Updated</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {secrets.data.map((s) => (
              <tr key={s.name} className="border-t border-zinc-800" data-testid="secret-row">
                <td className="py-1 font-mono text-zinc-100">{s.name}</td>
                <td>{s.updatedBy?.name ?? "—"}</td>
                <td title={fmtDateTime(s.updatedAt)}>{fmtAgo(s.updatedAt)}</td>
                <td className="text-right">
                  {admin && (
                    <Button variant="ghost" onClick={() => remove.mutate({ name: s.name })} disabled={remove.isPending}>
                      Delete
                    </Button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p className="text-zinc-500">No secrets yet.</p>
      )}
      {admin && (
        <form
          className="flex flex-wrap items-center gap-2"
          onSubmit={(e) => {
            e.preventDefault();
            setSaved(null);
            save.mutate({ name: name.trim(), value });
          }}
        >
          <input
            aria-label="Secret name"
            placeholder="OPENAI_KEY"
            className="h-8 w-48 rounded border border-zinc-700 bg-zinc-950 px-2 font-mono"
            value={name}
            onChange={(e) => setName(e.target.value)}
          />
          <input
            aria-label="Secret value"
            type="password"
            autoComplete="off"
            placeholder="value (not shown again)"
            className="h-8 w-80 rounded border border-zinc-700 bg-zinc-950 px-2"
            value={value}
            onChange={(e) => setValue(e.target.value)}
          />
          <Button type="submit" disabled={save.isPending || !name || !value}>
            {secrets.data?.some((s) => s.name === name.trim()) ? "Replace" : "Add"}
          </Button>
        </form>
      )}
      {saved && <p className="text-emerald-300">Saved {saved}. Its value will not be shown again.</p>}
      {save.error && <p className="text-red-300">{issues?.join("; ") ?? save.error.message}</p>}
      {remove.error && <p className="text-red-300">{remove.error.message}</p>}
    </section>
  );
}
