"use client";
/**
 * The workspace's alert webhook (admins and up, in /settings/workspace): URL, a signing secret shown once,
 * and the delivery log (status code, attempts, times). Deliveries are signed per Standard Webhooks.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "@/components/trpc";
import { Button } from "@/components/ui/primitives";
import { fmtAgo, fmtDateTime } from "@/components/ui/format";

const STATUS_STYLE: Record<string, string> = { delivered: "text-emerald-300", pending: "text-amber-300", failed: "text-red-300" };

export function WebhookSettings() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const hook = useQuery(trpc.flags.webhook.queryOptions());
  const deliveries = useQuery(trpc.flags.deliveries.queryOptions(undefined, { refetchInterval: 10_000 }));
  const [url, setUrl] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.flags.webhook.queryKey() });
  const save = useMutation(
    trpc.flags.setWebhook.mutationOptions({
      onSuccess: (res) => {
        setSecret(res.secret);
        setUrl(null);
        void refresh();
      },
    }),
  );
  const remove = useMutation(trpc.flags.removeWebhook.mutationOptions({ onSuccess: () => void refresh() }));
  const editing = url !== null || (hook.data === null && !secret);
  const value = url ?? "";
  return (
    <section className="flex flex-col gap-2" data-testid="webhook-settings">
      <h2 className="font-medium text-zinc-100">Alert webhook</h2>
      <p className="text-zinc-500">
        Run finished, failed, stopped or stalled, and every pathology flag, is POSTed as JSON to this URL, signed per{" "}
        <span className="text-zinc-300">Standard Webhooks</span> (webhook-id, webhook-timestamp, webhook-signature headers) and retried with
        backoff until it answers 2xx.
      </p>
      {hook.data && !editing && (
        <div className="flex items-center gap-2">
          <code className="break-all text-zinc-100">{hook.data.url}</code>
          <span className="text-zinc-500">secret {hook.data.secretHint}</span>
          <Button variant="ghost" onClick={() => setUrl(hook.data?.url ?? "")}>
            Change
          </Button>
          <Button variant="ghost" onClick={() => remove.mutate()} disabled={remove.isPending}>
            Remove
          </Button>
        </div>
      )}
      {editing && (
        <form
          className="flex items-center gap-2"
          onSubmit={(e) => {
            e.preventDefault();
            save.mutate({ url: value });
          }}
        >
          <input
            aria-label="Webhook URL"
            placeholder="https://example.com/hooks/rollbook"
            className="h-8 w-[28rem] rounded border border-zinc-700 bg-zinc-950 px-2"
            value={value}
            onChange={(e) => setUrl(e.target.value)}
          />
          <Button type="submit" disabled={save.isPending}>
            Save and make a new secret
          </Button>
          {hook.data && (
            <Button variant="ghost" onClick={() => setUrl(null)}>
              Cancel
            </Button>
          )}
        </form>
      )}
      {save.error && <p className="text-red-300">{save.error.message}</p>}
      {secret && (
        <div className="rounded border border-amber-700 bg-amber-950/40 p-2">
          <p className="text-amber-200">The signing secret (shown once: verify deliveries with it):</p>
          <code data-testid="webhook-secret" className="break-all text-zinc-100 select-all">
            {secret}
          </code>
        </div>
      )}
      {deliveries.data && deliveries.data.length > 0 && (
        <table className="w-full text-left" data-testid="webhook-deliveries">
          <thead className="text-zinc-500">
            <tr>
              <th className="py-1 font-normal">Alert</th>
              <th className="font-normal">Status</th>
              <th className="font-normal">Code</th>
              <th className="font-normal">Attempts</th>
              <th className="font-normal">Last error</th>
              <th className="font-normal">Queued</th>
              <th className="font-normal">Next / delivered</th>
            </tr>
          </thead>
          <tbody>
            {deliveries.data.map((d) => (
              <tr key={d.id} className="border-t border-zinc-800" data-testid="delivery-row">
                <td className="max-w-72 truncate py-1" title={d.url}>
                  {d.alert.title}
                </td>
                <td className={STATUS_STYLE[d.status] ?? ""}>{d.status}</td>
                <td className="font-mono">{d.lastStatusCode ?? "—"}</td>
                <td className="font-mono">{d.attempts}</td>
                <td className="max-w-60 truncate text-zinc-500" title={d.lastError ?? undefined}>
                  {d.lastError ?? "—"}
                </td>
                <td title={fmtDateTime(d.createdAt)}>{fmtAgo(d.createdAt)}</td>
                <td>{d.status === "delivered" ? fmtDateTime(d.deliveredAt) : d.status === "pending" ? fmtDateTime(d.nextAttemptAt) : "gave up"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
