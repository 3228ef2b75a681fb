"use client";
/**
 * A run's lineage in its page header: "forked from #12 @ step 3" (a link to the parent), the runs forked
 * from it, and (for members) Fork: pick one of its checkpoints — or none, a re-run from the base model —
 * and the editor opens on the run's exact files with a banner that starts the fork (fork-banner.tsx).
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useEffect, useRef, useState } from "react";
import { useCan } from "@/components/auth/use-role";
import { useTRPC } from "@/components/trpc";
import { Button } from "@/components/ui/primitives";

/** The editor's address for a fork of `runId` (step null: a re-run). Read back by fork-banner.tsx. */
export function forkEditorHref(experimentId: string, runId: string, step: number | null): string {
  const q = new URLSearchParams({ fork: runId });
  if (step !== null) q.set("step", String(step));
  return `/experiments/${experimentId}?${q.toString()}`;
}

export function RunLineage({ runId }: { runId: string }) {
  const trpc = useTRPC();
  const lineage = useQuery(trpc.runs.lineage.queryOptions({ id: runId }));
  const [open, setOpen] = useState(false);
  const data = lineage.data;
  if (!data || (!data.parent && data.forks.length === 0)) return null;
  return (
    <span className="relative flex items-center gap-2 text-[12px] text-zinc-400" data-testid="run-lineage">
      {data.parent && (
        <span>
          forked from{" "}
          <Link href={`/runs/${data.parent.id}`} className="font-mono text-zinc-200 hover:underline">
            #{data.parent.number}
            {data.parent.step !== null ? ` @ step ${data.parent.step}` : ""}
          </Link>
          {data.parent.step === null && " (re-run)"}
        </span>
      )}
      {data.forks.length > 0 && (
        <button type="button" className="rounded px-1 text-zinc-400 hover:bg-zinc-800 hover:text-zinc-200" onClick={() => setOpen((o) => !o)} aria-expanded={open}>
          {data.forks.length} fork{data.forks.length === 1 ? "" : "s"} ▾
        </button>
      )}
      {open && (
        <ul className="absolute top-6 left-0 z-20 max-h-72 w-64 overflow-auto rounded border border-zinc-700 bg-zinc-900 p-1 shadow-lg" data-testid="run-forks">
          {data.forks.map((f) => (
            <li key={f.id}>
              <Link href={`/runs/${f.id}`} className="flex items-center gap-2 rounded px-2 py-1 hover:bg-zinc-800">
                <span className="font-mono text-zinc-200">#{f.number}</span>
                <span className="text-zinc-400">{f.kind}</span>
                <span className="text-zinc-500">{f.step !== null ? `@ step ${f.step}` : "re-run"}</span>
                <span className="ml-auto text-zinc-500">{f.status}</span>
              </Link>
            </li>
          ))}
        </ul>
      )}
    </span>
  );
}

/** Fork (members only): choose a checkpoint, or none for a re-run, and open the editor on the run's files. */
export function ForkButton({ runId }: { runId: string }) {
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const canFork = useCan("run.fork");
  const lineage = useQuery(trpc.runs.lineage.queryOptions({ id: runId }));
  const [open, setOpen] = useState(false);
  const steps = lineage.data?.run.checkpointSteps ?? [];
  const newest = steps.at(-1) ?? null;
  const [step, setStep] = useState<number | null | undefined>(undefined);
  const chosen = step === undefined ? newest : step;
  const box = useRef<HTMLSpanElement>(null);
  useEffect(() => {
    if (!open) return;
    const close = (e: MouseEvent) => box.current && !box.current.contains(e.target as Node) && setOpen(false);
    window.addEventListener("mousedown", close);
    return () => window.removeEventListener("mousedown", close);
  }, [open]);

  const fork = useMutation(
    trpc.runs.fork.mutationOptions({
      onSuccess: (res) => {
        // The editor adopts the experiment's files when it mounts: drop the cached (older) head first.
        queryClient.removeQueries({ queryKey: trpc.experiments.pathKey() });
        router.push(forkEditorHref(res.experimentId, res.parent.runId, res.parent.step));
      },
    }),
  );
  if (!canFork || !lineage.data) return null;

  return (
    <span ref={box} className="relative">
      <Button onClick={() => setOpen((o) => !o)} title="Open this run's exact files in the editor to edit and start a new run from one of its checkpoints" aria-expanded={open}>
        Fork
      </Button>
      {open && (
        <div className="absolute top-8 right-0 z-20 w-72 space-y-2 rounded border border-zinc-700 bg-zinc-900 p-3 text-[12px] text-zinc-300 shadow-lg" data-testid="fork-menu">
          <label className="block">
            <span className="mb-1 block text-zinc-400">Start from</span>
            <select
              aria-label="Checkpoint to fork from"
              className="w-full rounded border border-zinc-700 bg-zinc-950 px-2 py-1 text-zinc-100"
              value={chosen === null ? "" : String(chosen)}
              onChange={(e) => setStep(e.target.value === "" ? null : Number(e.target.value))}
            >
              {[...steps].reverse().map((s) => (
                <option key={s} value={s}>
                  checkpoint @ step {s}
                  {s === newest ? " (latest)" : ""}
                </option>
              ))}
              <option value="">no checkpoint: re-run from the base model</option>
            </select>
          </label>
          <p className="text-zinc-500">
            The editor opens on run #{lineage.data.run.number}&apos;s exact files as a new version; edit them, then start from the banner.
          </p>
          <div className="flex justify-end gap-2">
            <Button variant="ghost" onClick={() => setOpen(false)}>
              Cancel
            </Button>
            <Button variant="primary" disabled={fork.isPending} onClick={() => fork.mutate({ runId, ...(chosen !== null ? { step: chosen } : {}) })}>
              {fork.isPending ? "Opening…" : "Open in editor"}
            </Button>
          </div>
          {fork.error && <div className="text-red-300">{fork.error.message}</div>}
        </div>
      )}
    </span>
  );
}
