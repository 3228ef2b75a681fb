"use client";
/**
 * Settings → Runners: the runners this workspace may use (health, last seen, device, models, capacity,
 * this workspace's running/queued), a register form whose server error lands on the field it names ("url: …",
 * "token: …"), enable/disable and remove. Everything a runner reports is rendered as text. A runner's
 * address and error texts reach only the instance's operator (every runner) and a workspace's admins (the
 * runners it registered): the server sends null to others, so the row shows them when they are there and
 * says who can see why when an unhealthy runner's error is not theirs to read. A runner's notices (advice about
 * its setup, e.g. a GPU sampling without vLLM) show under its name, as text, to every member.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { useNow } from "@/components/ui/use-now";
import { useTRPC } from "@/components/trpc";
import { Button, ErrorBox, Spinner } from "@/components/ui/primitives";
import { fmtAgo } from "@/components/ui/format";
import { TextField } from "@/components/ui/text-field";
import type { RunnerNotice } from "@contracts";

const HEALTH_DOT: Record<string, string> = {
  healthy: "bg-emerald-400",
  unreachable: "bg-red-400",
  unauthorized: "bg-red-400",
  error: "bg-amber-400",
  unknown: "bg-zinc-500",
};

type Field = "name" | "url" | "token" | "capacity";
const FIELDS: readonly Field[] = ["name", "url", "token", "capacity"];

/** The server names the field first ("url: no runner answered …"); anything else is shown under the form. */
export function fieldOfError(message: string): { field: Field | null; text: string } {
  const m = /^(\w+): ([\s\S]*)$/.exec(message);
  const field = m && (FIELDS as readonly string[]).includes(m[1]!) ? (m[1] as Field) : null;
  return field ? { field, text: m![2]! } : { field: null, text: message };
}

/** A runner's advice about its setup, as text (what it sends is never markup). */
export function RunnerNotices({ notices }: { notices: readonly RunnerNotice[] }) {
  if (notices.length === 0) return null;
  return (
    <ul className="mt-1 flex max-w-md flex-col gap-1">
      {notices.map((n) => (
        <li key={n.kind} role="status" data-testid="runner-notice" data-kind={n.kind} className="rounded border border-amber-700/60 bg-amber-950/40 px-2 py-1 text-[12px] break-words whitespace-normal text-amber-200">
          <span aria-hidden>⚠ </span>
          {n.message}
        </li>
      ))}
    </ul>
  );
}

function RegisterRunner({ onDone }: { onDone: () => void }) {
  const trpc = useTRPC();
  const [form, setForm] = useState({ name: "", url: "", token: "", capacity: "" });
  const register = useMutation(
    trpc.runners.register.mutationOptions({
      onSuccess: () => {
        setForm({ name: "", url: "", token: "", capacity: "" });
        onDone();
      },
    }),
  );
  const error = register.error ? fieldOfError(register.error.message) : null;
  const fieldError = (f: Field) =>
    error?.field === f ? (
      <p role="alert" data-testid={`runner-${f}-error`} className="text-[12px] text-red-300">
        {error.text}
      </p>
    ) : null;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    register.mutate({ name: form.name, url: form.url, token: form.token, ...(form.capacity ? { capacity: Number(form.capacity) } : {}) });
  };
  const set = (f: Field) => (e: { target: { value: string } }) => setForm((s) => ({ ...s, [f]: e.target.value }));
  return (
    <form onSubmit={submit} className="flex flex-col gap-2 rounded border border-zinc-800 p-3" aria-label="Register a runner">
      <h3 className="text-zinc-200">Register a runner</h3>
      <div className="grid grid-cols-2 gap-2">
        <div>
          <TextField label="Name" value={form.name} onChange={set("name")} placeholder="gpu-box-1" required />
          {fieldError("name")}
        </div>
        <div>
          <TextField label="URL" value={form.url} onChange={set("url")} placeholder="http://gpu-box:4100" required />
          {fieldError("url")}
        </div>
        <div>
          <TextField label="Token (its RUNNER_TOKEN)" type="password" autoComplete="off" value={form.token} onChange={set("token")} required />
          {fieldError("token")}
        </div>
        <div>
          <TextField label="Capacity (blank: what it reports)" type="number" min={1} value={form.capacity} onChange={set("capacity")} />
          {fieldError("capacity")}
        </div>
      </div>
      {error && !error.field && (
        <p role="alert" className="text-red-300">
          {error.text}
        </p>
      )}
      <div>
        <Button type="submit" disabled={register.isPending}>
          {register.isPending ? "Checking the runner…" : "Register"}
        </Button>
        <span className="ml-2 text-[12px] text-zinc-500">The runner must answer and accept the token before anything is saved.</span>
      </div>
    </form>
  );
}

export function RunnersSettings({ admin }: { admin: boolean }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const now = useNow(1_000);
  const runners = useQuery({ ...trpc.runners.list.queryOptions(), refetchInterval: 2_000 });
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.runners.list.queryKey() });
  const update = useMutation(trpc.runners.update.mutationOptions({ onSuccess: () => void refresh() }));
  const remove = useMutation(trpc.runners.remove.mutationOptions({ onSuccess: () => void refresh() }));
  const actionError = update.error ?? remove.error;
  return (
    <section className="flex flex-col gap-2" aria-label="Runners">
      <h2 className="font-medium text-zinc-100">Runners</h2>
      {runners.isPending && <Spinner label="Loading runners" />}
      {runners.error && <ErrorBox title="Could not load runners">{runners.error.message}</ErrorBox>}
      {runners.data && (
        <table className="w-full text-left [&_td]:pr-3 [&_th]:pr-3">
          <thead className="text-zinc-500">
            <tr>
              <th className="py-1 font-normal">Runner</th>
              <th className="font-normal">Health</th>
              <th className="font-normal">Last seen</th>
              <th className="font-normal">Device</th>
              <th className="font-normal">Models</th>
              <th className="font-normal">Capacity</th>
              <th className="font-normal whitespace-nowrap" title="This workspace's runs">
                Running / queued
              </th>
              <th />
            </tr>
          </thead>
          <tbody>
            {runners.data.map((r) => (
              <tr key={r.id} className="border-t border-zinc-800 align-top" data-testid="runner-row">
                <td className="py-1">
                  <div className="text-zinc-100">{r.name}</div>
                  <div className="text-[12px] text-zinc-500">
                    {[r.url, r.scope === "instance" ? "this server's runner" : "this workspace", !r.enabled && "disabled"].filter(Boolean).join(" · ")}
                  </div>
                  <RunnerNotices notices={r.notices} />
                </td>
                <td className="whitespace-nowrap">
                  <span className="inline-flex items-center gap-1" title={r.lastError ?? undefined}>
                    <span aria-hidden className={`inline-block h-2 w-2 rounded-full ${HEALTH_DOT[r.health] ?? HEALTH_DOT.unknown}`} />
                    {r.health}
                  </span>
                  {r.lastError && r.health !== "healthy" && <div className="max-w-xs text-[12px] break-words whitespace-normal text-red-300">{r.lastError}</div>}
                  {!r.lastError && r.health !== "healthy" && r.health !== "unknown" && (
                    <div className="max-w-xs text-[12px] whitespace-normal text-zinc-500">
                      {r.scope === "instance" ? "Why is shown to this server's operator." : "Why is shown to this workspace's admins."}
                    </div>
                  )}
                </td>
                <td className="whitespace-nowrap">{r.lastSeenAt ? fmtAgo(r.lastSeenAt, now) : "never"}</td>
                <td>{r.device ?? "—"}</td>
                <td className="max-w-[14rem] break-words">{r.models.length > 0 ? r.models.join(", ") : "—"}</td>
                <td>{r.capacity}</td>
                <td>
                  {r.running} / {r.queued}
                </td>
                <td className="text-right whitespace-nowrap">
                  {admin && r.scope === "workspace" && (
                    <>
                      <Button variant="ghost" onClick={() => update.mutate({ id: r.id, enabled: !r.enabled })}>
                        {r.enabled ? "Disable" : "Enable"}
                      </Button>
                      <Button variant="ghost" onClick={() => remove.mutate({ id: r.id })}>
                        Remove
                      </Button>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {actionError && (
        <p role="alert" className="text-red-300">
          {actionError.message}
        </p>
      )}
      {admin && <RegisterRunner onDone={() => void refresh()} />}
    </section>
  );
}
