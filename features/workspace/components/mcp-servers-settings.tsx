"use client";
/**
 * The workspace's registered stdio MCP servers (in /settings/workspace): the only commands its experiments
 * may start on the runner, which they name in config.json (`{ "transport": "stdio", "server": "<name>" }`).
 * Everyone sees them; admins add, change and remove them. The runner runs each in its sandbox.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "@/components/trpc";
import { Button } from "@/components/ui/primitives";
import { fmtAgo, fmtDateTime } from "@/components/ui/format";

interface Draft {
  name: string;
  command: string;
  /** One argument per line (no shell: each line is one argv entry). */
  args: string;
  /** KEY=value per line; values may say ${SECRET}. */
  env: string;
  network: boolean;
  description: string;
}

const EMPTY: Draft = { name: "", command: "", args: "", env: "", network: false, description: "" };

function toDefinition(d: Draft) {
  const env: Record<string, string> = {};
  for (const line of d.env.split("\n")) {
    if (!line.trim()) continue;
    const at = line.indexOf("=");
    // A line with no "=" is sent as a key with an empty value: the server names it if it is not a valid one.
    env[(at < 0 ? line : line.slice(0, at)).trim()] = at < 0 ? "" : line.slice(at + 1);
  }
  return {
    command: d.command.trim(),
    args: d.args.split("\n").filter((l) => l.length > 0),
    env,
    network: d.network,
    ...(d.description.trim() ? { description: d.description.trim() } : {}),
  };
}

export function McpServersSettings({ admin }: { admin: boolean }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const servers = useQuery(trpc.mcpServers.list.queryOptions());
  const [draft, setDraft] = useState<Draft | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.mcpServers.list.queryKey() });
  const save = useMutation(
    trpc.mcpServers.set.mutationOptions({
      onSuccess: () => {
        setDraft(null);
        void refresh();
      },
    }),
  );
  const remove = useMutation(trpc.mcpServers.remove.mutationOptions({ onSuccess: () => void refresh() }));
  const issues = save.error?.data && "issues" in save.error.data ? (save.error.data.issues as string[] | null) : null;
  const field = "rounded border border-zinc-700 bg-zinc-950 px-2";
  return (
    <section className="flex flex-col gap-2" data-testid="mcp-servers-settings">
      <h2 className="font-medium text-zinc-100">MCP servers</h2>
      <p className="text-zinc-500">
        The stdio MCP servers experiments may start, by name: <code className="text-zinc-300">{'{ "transport": "stdio", "server": "<name>" }'}</code>{" "}
        in config.json. The runner runs each in a sandbox as <code className="text-zinc-300">nobody</code>, with only the environment given here, no
        network unless asked for and allowed by the runner, and none of the runner&apos;s files.
      </p>
      <table className="w-full text-left">
        <thead className="text-zinc-500">
          <tr>
            <th className="py-1 font-normal">Name</th>
            <th className="font-normal">Command</th>
            <th className="font-normal">Env</th>
            <th className="font-normal">Network</th>
            <th className="font-normal">Updated</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {servers.data?.map((s) => (
            <tr key={s.name} className="border-t border-zinc-800 align-top" data-testid="mcp-server-row">
              <td className="py-1 font-mono text-zinc-100" title={s.definition.description}>
                {s.name}
              </td>
              <td className="font-mono break-all">{[s.definition.command, ...s.definition.args].join(" ")}</td>
              <td className="font-mono text-zinc-400">{Object.keys(s.definition.env).join(", ") || "—"}</td>
              <td>{s.definition.network ? "asked for" : "none"}</td>
              <td title={fmtDateTime(s.updatedAt)}>{fmtAgo(s.updatedAt)}</td>
              <td className="text-right whitespace-nowrap">
                {admin && (
                  <>
                    <Button
                      variant="ghost"
                      onClick={() =>
                        setDraft({
                          name: s.name,
                          command: s.definition.command,
                          args: s.definition.args.join("\n"),
                          env: Object.entries(s.definition.env)
                            .map(([k, v]) => `${k}=${v}`)
                            .join("\n"),
                          network: s.definition.network,
                          description: s.definition.description ?? "",
                        })
                      }
                    >
                      Edit
                    </Button>
                    <Button variant="ghost" onClick={() => remove.mutate({ name: s.name })} disabled={remove.isPending}>
                      Remove
                    </Button>
                  </>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {admin && !draft && (
        <div>
          <Button onClick={() => setDraft(EMPTY)}>Register a server</Button>
        </div>
      )}
      {admin && draft && (
        <form
          className="grid max-w-2xl grid-cols-[8rem_1fr] items-start gap-2"
          onSubmit={(e) => {
            e.preventDefault();
            save.mutate({ name: draft.name.trim(), definition: toDefinition(draft) });
          }}
        >
          <label htmlFor="mcp-name">Name</label>
          <input id="mcp-name" className={`h-8 font-mono ${field}`} value={draft.name} onChange={(e) => setDraft({ ...draft, name: e.target.value })} />
          <label htmlFor="mcp-command">Command</label>
          <input
            id="mcp-command"
            placeholder="mcp-server-everything"
            className={`h-8 font-mono ${field}`}
            value={draft.command}
            onChange={(e) => setDraft({ ...draft, command: e.target.value })}
          />
          <label htmlFor="mcp-args">Arguments</label>
          <textarea
            id="mcp-args"
            placeholder="one per line"
            rows={3}
            className={`font-mono ${field}`}
            value={draft.args}
            onChange={(e) => setDraft({ ...draft, args: e.target.value })}
          />
          <label htmlFor="mcp-env">Environment</label>
          <textarea
            id="mcp-env"
            placeholder={"KEY=value, one per line; secrets as API_KEY=${MY_SECRET}"}
            rows={3}
            className={`font-mono ${field}`}
            value={draft.env}
            onChange={(e) => setDraft({ ...draft, env: e.target.value })}
          />
          <label htmlFor="mcp-network">Network</label>
          <label className="flex items-center gap-2">
            <input id="mcp-network" type="checkbox" checked={draft.network} onChange={(e) => setDraft({ ...draft, network: e.target.checked })} />
            <span className="text-zinc-500">asks for the network (the runner&apos;s operator decides whether it gets it)</span>
          </label>
          <label htmlFor="mcp-description">Description</label>
          <input id="mcp-description" className={`h-8 ${field}`} value={draft.description} onChange={(e) => setDraft({ ...draft, description: e.target.value })} />
          <span />
          <div className="flex gap-2">
            <Button type="submit" disabled={save.isPending}>
              Save
            </Button>
            <Button variant="ghost" onClick={() => setDraft(null)}>
              Cancel
            </Button>
          </div>
        </form>
      )}
      {save.error && <p className="text-red-300">{issues?.join("; ") ?? save.error.message}</p>}
      {remove.error && <p className="text-red-300">{remove.error.message}</p>}
    </section>
  );
}
