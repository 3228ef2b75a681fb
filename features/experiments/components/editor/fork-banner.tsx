"use client";
/**
 * The editor's fork banner. The run page's Fork opens the editor at `?fork=<run>&step=<n>` (forkEditorHref)
 * on the run's exact files; this banner says where a run started from here begins and starts it with
 * runs.start's `fork`: a train run from that checkpoint's adapter (optimizer state only when ticked: a fork
 * is a new run), an eval of that checkpoint, or — without a step — a re-run of the same kind from the base
 * model. The editor's own Train/Eval buttons stay plain runs; dismissing the banner makes them the only way.
 */
import { useQuery } from "@tanstack/react-query";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { useState } from "react";
import type { RunKind } from "@contracts";
import { useTRPC } from "@/components/trpc";
import { Button } from "@/components/ui/primitives";

export type StartFork = { parentRunId: string; parentStep?: number; loadOptimizer?: boolean };

export function ForkBanner({ busy, onStart }: { busy: boolean; onStart: (kind: RunKind, fork: StartFork) => void }) {
  const trpc = useTRPC();
  const router = useRouter();
  const pathname = usePathname();
  const search = useSearchParams();
  const parentRunId = search.get("fork");
  const rawStep = search.get("step");
  const step = rawStep !== null && /^\d{1,9}$/.test(rawStep) ? Number(rawStep) : null;
  const [loadOptimizer, setLoadOptimizer] = useState(false);
  const parent = useQuery(trpc.runs.lineage.queryOptions({ id: parentRunId ?? "" }, { enabled: !!parentRunId }));
  if (!parentRunId) return null;

  const dismiss = () => router.replace(pathname);
  const tone = "flex shrink-0 flex-wrap items-center gap-3 border-b border-sky-900 bg-sky-950/40 px-4 py-1.5 text-[12px] text-sky-100";
  if (parent.error) {
    return (
      <div role="alert" className={tone} data-testid="fork-banner">
        <span className="min-w-0 flex-1">Cannot fork: {parent.error.message}</span>
        <Button variant="ghost" onClick={dismiss}>
          Dismiss
        </Button>
      </div>
    );
  }
  const run = parent.data?.run;
  if (!run) return null;
  const label = `run #${run.number}`;
  const fork: StartFork = { parentRunId, ...(step !== null ? { parentStep: step } : {}) };

  return (
    <div role="status" className={tone} data-testid="fork-banner">
      {step !== null ? (
        <>
          <span className="min-w-0 flex-1">
            Forked from {label} @ step {step} — edits will start from that checkpoint.
          </span>
          <label className="flex items-center gap-1.5 text-sky-200" title="A fork is a new run: by default it takes the checkpoint's adapter weights and starts AdamW afresh">
            <input type="checkbox" checked={loadOptimizer} onChange={(e) => setLoadOptimizer(e.target.checked)} />
            also restore optimizer state
          </label>
          <Button onClick={() => onStart("eval", fork)} disabled={busy} title={`Evaluate ${label} @ step ${step} on the validation tasks`}>
            Eval this checkpoint
          </Button>
          <Button variant="primary" onClick={() => onStart("train", { ...fork, ...(loadOptimizer ? { loadOptimizer } : {}) })} disabled={busy}>
            Train from checkpoint
          </Button>
        </>
      ) : (
        <>
          <span className="min-w-0 flex-1">
            Re-run of {label} — starts from the base model and records {label} as its parent.
          </span>
          <Button variant="primary" onClick={() => onStart(run.kind, fork)} disabled={busy}>
            Start {run.kind} re-run
          </Button>
        </>
      )}
      <Button variant="ghost" onClick={dismiss} title="Close the banner: Train and Eval above start plain runs">
        ×
      </Button>
    </div>
  );
}
