"use client";
/**
 * Pathology flags (features/flags/server/detect): the strip in the run page's header, live (a `run:flag`
 * socket message refetches it), and the badge in the runs table. Each flag links to what raised it:
 * `/runs/<id>?tab=rollouts&flag=<flag>&steps=7,8&rollouts=a,b` — the run page filters its rollouts to
 * those ids (or, for flags on trainer metrics, to those steps' train rollouts).
 */
import { useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useEffect } from "react";
import type { RunFlagMessage } from "@/contracts/socket-events";
import { useTRPC } from "@/components/trpc";
import { flagHref, type FlagFocus } from "./flag-links";
import { getSocket } from "@/components/socket";

export const FLAG_LABELS: Record<string, string> = {
  reward_collapse: "Reward collapse",
  converged: "Converged",
  length_drift: "Length drift",
  reward_hacking: "Reward hacking?",
  low_probs_corr: "Low probs_corr",
  kl_blowup: "KL blow-up",
  nonfinite_loss: "NaN/Inf loss",
  exception_rate: "Exceptions rising",
  runner_faults: "Runner lost rollouts",
  stalled: "Stalled",
  validation_fell: "Validation fell from best",
};

// info (converged, length moving with the reward) is not a problem: a quiet sky tone, no ⚑.
const SEVERITY_STYLE = {
  critical: "bg-red-500/15 text-red-200 ring-red-500/50 hover:bg-red-500/25",
  warning: "bg-amber-400/10 text-amber-200 ring-amber-500/40 hover:bg-amber-400/20",
  info: "bg-sky-400/10 text-sky-200 ring-sky-500/30 hover:bg-sky-400/20",
} as const;
const SEVERITY_RANK: Record<string, number> = { info: 0, warning: 1, critical: 2 };
const styleOf = (severity: string) => SEVERITY_STYLE[severity === "critical" || severity === "info" ? severity : "warning"];

const stepsText = (f: Pick<RunFlagMessage, "firstStep" | "lastStep">) => (f.firstStep === f.lastStep ? `step ${f.firstStep}` : `steps ${f.firstStep}–${f.lastStep}`);

/** The run page's strip of flags (nothing when there are none). */
export function RunFlagsStrip({ runId, onOpen }: { runId: string; onOpen: (focus: FlagFocus, href: string) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const flags = useQuery(trpc.flags.runFlags.queryOptions({ runId }));
  useEffect(() => {
    const s = getSocket();
    const onFlag = (f: RunFlagMessage) => {
      if (f.runId === runId) void queryClient.invalidateQueries({ queryKey: trpc.flags.runFlags.queryKey({ runId }) });
    };
    s.on("run:flag", onFlag);
    return () => void s.off("run:flag", onFlag);
  }, [runId, queryClient, trpc]);
  if (!flags.data?.length) return null;
  return (
    <div className="mt-2 flex flex-wrap items-center gap-1.5" data-testid="run-flags" aria-label="Pathology flags">
      {flags.data.map((f) => {
        const href = flagHref(runId, f);
        return (
          <a
            key={f.id}
            href={href}
            data-testid="run-flag"
            data-rule={f.rule}
            title={f.message}
            onClick={(e) => {
              if (e.metaKey || e.ctrlKey || e.shiftKey) return;
              e.preventDefault();
              onOpen({ flagId: f.id, steps: f.steps, rolloutIds: f.rolloutIds }, href);
            }}
            className={`inline-flex max-w-[40rem] items-center gap-1.5 rounded px-2 py-0.5 text-[12px] ring-1 ring-inset ${styleOf(f.severity)}`}
          >
            <span aria-hidden>{f.severity === "info" ? "ⓘ" : "⚑"}</span>
            <span className="font-medium">{FLAG_LABELS[f.rule] ?? f.rule}</span>
            <span className="opacity-70">{stepsText(f)}</span>
            {f.rolloutIds.length > 0 && <span className="opacity-60">· {f.rolloutIds.length} rollouts</span>}
          </a>
        );
      })}
    </div>
  );
}

/** The runs table's flag cell: one badge per rule, worst severity first; each opens the run at that flag. */
export function RunFlagsBadge({ runId, flags }: { runId: string; flags: { rule: string; severity: string; firstStep: number }[] }) {
  if (!flags.length) return <span className="text-zinc-700">—</span>;
  const byRule = new Map<string, { severity: string; firstStep: number }>();
  for (const f of flags) {
    const prev = byRule.get(f.rule);
    if (!prev || (SEVERITY_RANK[f.severity] ?? 1) > (SEVERITY_RANK[prev.severity] ?? 1)) byRule.set(f.rule, f);
  }
  const list = [...byRule].sort((a, b) => (SEVERITY_RANK[b[1].severity] ?? 1) - (SEVERITY_RANK[a[1].severity] ?? 1));
  return (
    <div className="flex max-w-56 flex-wrap gap-1" data-testid="run-flags-cell">
      {list.map(([rule, f]) => (
        <Link
          key={rule}
          href={`/runs/${runId}?tab=rollouts&steps=${f.firstStep}`}
          title={`${FLAG_LABELS[rule] ?? rule} from step ${f.firstStep}`}
          className={`rounded px-1.5 text-[11px] whitespace-nowrap ring-1 ring-inset ${styleOf(f.severity)}`}
        >
          {f.severity === "info" ? "ⓘ" : "⚑"} {FLAG_LABELS[rule] ?? rule}
        </Link>
      ))}
    </div>
  );
}
