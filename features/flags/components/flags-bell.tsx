"use client";
/**
 * The top bar's alerts: a bell with the member's unread count and a panel of the workspace's newest
 * alerts (run finished, failed, stopped, stalled, pathology flags), each linking to its run — a flag's to
 * the rollouts that raised it. Opening the panel marks them read (for this member only).
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useEffect, useRef, useState } from "react";
import { flagHref } from "./flag-links";
import { useTRPC } from "@/components/trpc";
import { fmtAgo, fmtDateTime } from "@/components/ui/format";

const SEVERITY_DOT: Record<string, string> = { critical: "bg-red-400", warning: "bg-amber-400", info: "bg-emerald-400" };

interface AlertData {
  steps?: number[];
  rolloutIds?: string[];
}

function alertHref(a: { id: string; runId: string | null; kind: string; data: unknown }): string | null {
  if (!a.runId) return null;
  const d = (a.data ?? {}) as AlertData;
  if ((a.kind === "run.flag" || a.kind === "run.stalled") && Array.isArray(d.steps)) {
    return flagHref(a.runId, { id: a.id, steps: d.steps, rolloutIds: Array.isArray(d.rolloutIds) ? d.rolloutIds : [] });
  }
  return `/runs/${a.runId}`;
}

export function AlertsBell() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const alerts = useQuery(trpc.flags.list.queryOptions(undefined, { refetchInterval: 15_000 }));
  const markRead = useMutation(trpc.flags.markRead.mutationOptions({ onSuccess: () => void qc.invalidateQueries({ queryKey: trpc.flags.list.queryKey() }) }));
  const [open, setOpen] = useState(false);
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!open) return;
    const close = (e: MouseEvent) => {
      if (!box.current?.contains(e.target as Node)) setOpen(false);
    };
    const esc = (e: KeyboardEvent) => e.key === "Escape" && setOpen(false);
    window.addEventListener("mousedown", close);
    window.addEventListener("keydown", esc);
    return () => {
      window.removeEventListener("mousedown", close);
      window.removeEventListener("keydown", esc);
    };
  }, [open]);
  if (!alerts.data) return null;
  const unread = alerts.data.unread;
  return (
    <div className="relative" ref={box}>
      <button
        type="button"
        data-testid="alerts-bell"
        aria-label={unread ? `Alerts, ${unread} unread` : "Alerts"}
        aria-expanded={open}
        className="relative grid h-7 w-7 place-items-center rounded text-zinc-400 hover:bg-zinc-800 hover:text-zinc-200"
        onClick={() => {
          setOpen(!open);
          if (!open && unread > 0) markRead.mutate();
        }}
      >
        <svg aria-hidden viewBox="0 0 24 24" className="h-4 w-4" fill="none" stroke="currentColor" strokeWidth="2">
          <path d="M6 8a6 6 0 1 1 12 0c0 7 3 9 3 9H3s3-2 3-9M10.3 21a1.94 1.94 0 0 0 3.4 0" />
        </svg>
        {unread > 0 && (
          <span data-testid="alerts-unread" className="absolute -top-1 -right-1 min-w-4 rounded-full bg-red-500 px-1 text-center text-[10px] leading-4 font-semibold text-white">
            {unread > 99 ? "99+" : unread}
          </span>
        )}
      </button>
      {open && (
        <div className="absolute top-9 right-0 z-50 w-[26rem] rounded border border-zinc-700 bg-zinc-900 shadow-xl" data-testid="alerts-panel">
          <div className="border-b border-zinc-800 px-3 py-2 text-[12px] font-medium text-zinc-300">Alerts</div>
          {alerts.data.items.length === 0 ? (
            <div className="px-3 py-4 text-[12px] text-zinc-500">Nothing yet: runs that finish, fail or stall, and pathology flags, show here.</div>
          ) : (
            <ul className="max-h-[28rem] divide-y divide-zinc-800 overflow-auto">
              {alerts.data.items.map((a) => {
                const href = alertHref(a);
                const body = (
                  <>
                    <div className="flex items-center gap-2">
                      <span aria-hidden className={`h-1.5 w-1.5 shrink-0 rounded-full ${SEVERITY_DOT[a.severity] ?? "bg-zinc-500"}`} />
                      <span className={`text-[12px] ${a.unread ? "font-semibold text-zinc-100" : "text-zinc-300"}`}>{a.title}</span>
                      <span className="ml-auto shrink-0 text-[11px] text-zinc-500" title={fmtDateTime(a.createdAt)}>
                        {fmtAgo(a.createdAt)}
                      </span>
                    </div>
                    <div className="mt-0.5 line-clamp-2 pl-3.5 text-[11px] text-zinc-400">{a.message}</div>
                  </>
                );
                return (
                  <li key={a.id} data-testid="alert-item">
                    {href ? (
                      <Link href={href} className="block px-3 py-2 hover:bg-zinc-800/70" onClick={() => setOpen(false)}>
                        {body}
                      </Link>
                    ) : (
                      <div className="px-3 py-2">{body}</div>
                    )}
                  </li>
                );
              })}
            </ul>
          )}
        </div>
      )}
    </div>
  );
}
