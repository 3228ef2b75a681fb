"use client";
/**
 * /compare?runs=a,b,c&baseline=a — 2 to 8 runs side by side: a legend (each run's color, used everywhere
 * on the page), overlaid metric charts, per-task reward deltas against the baseline (regressions first),
 * the config diff and the code diff. The address holds the selection, so a comparison can be shared.
 */
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import type { ReactNode } from "react";
import { MEAN_REWARD_DEFINITION, isActiveStatus } from "@contracts";
import { useTRPC, type RouterOutputs } from "@/components/trpc";
import { fmtDateTime, fmtNum } from "@/components/ui/format";
import { EmptyState, ErrorBox, KindBadge, Spinner, StatusBadge } from "@/components/ui/primitives";
import { CodeDiff } from "@/components/code/code-diff";
import { runColor } from "./colors";
import { COMPARE_MAX_RUNS, COMPARE_MIN_RUNS, compareHref } from "../compare-url";
import { ConfigDiff } from "./config-diff";
import { MetricCharts } from "./metric-charts";
import { TaskDeltas } from "./task-deltas";

type CompareRun = RouterOutputs["compare"]["runs"]["runs"][number];

function Section({ title, children, testId }: { title: string; children: ReactNode; testId?: string }) {
  return (
    <section className="border-b border-zinc-800 px-4 py-3" data-testid={testId}>
      <h2 className="mb-2 text-[11px] font-medium tracking-wide text-zinc-400 uppercase">{title}</h2>
      {children}
    </section>
  );
}

function RunLegend(props: { run: CompareRun; index: number; baseline: boolean; onBaseline: () => void; onRemove?: () => void }) {
  const { run, index, baseline, onBaseline, onRemove } = props;
  return (
    <div className="flex min-w-56 flex-col gap-1 rounded border border-zinc-800 bg-zinc-900/40 px-2.5 py-2" data-testid="compare-run" style={{ borderTopColor: runColor(index), borderTopWidth: 3 }}>
      <div className="flex items-center gap-2">
        <span aria-hidden className="h-2.5 w-2.5 rounded-full" style={{ background: runColor(index) }} />
        <Link href={`/runs/${run.id}`} className="font-mono text-[13px] text-zinc-100 hover:underline">
          #{run.number}
        </Link>
        <KindBadge kind={run.kind} />
        <StatusBadge status={run.status} kind={run.kind} />
        {onRemove && (
          <button type="button" onClick={onRemove} className="ml-auto text-[12px] text-zinc-500 hover:text-zinc-200" aria-label={`Remove run #${run.number} from the comparison`}>
            ✕
          </button>
        )}
      </div>
      <Link href={`/experiments/${run.experiment.id}`} className="truncate text-[12px] text-zinc-300 hover:underline" title={run.experiment.name}>
        {run.experiment.name} <span className="font-mono text-zinc-500">v{run.version.number}</span>
      </Link>
      <div className="truncate font-mono text-[11px] text-zinc-500" title={run.evalModel ?? run.baseModel}>
        {run.evalModel ? `eval of ${run.evalModel}` : run.baseModel}
      </div>
      <div className="text-[11px] text-zinc-500">
        {run.createdBy ? run.createdBy.name || run.createdBy.email : "—"} · {fmtDateTime(run.createdAt)}
      </div>
      <div className="text-[11px] text-zinc-500" title={MEAN_REWARD_DEFINITION}>
        mean reward <span className="font-mono text-zinc-300">{fmtNum(run.rewardMean)}</span>
      </div>
      <label className="flex items-center gap-1.5 text-[12px] text-zinc-300">
        <input type="radio" name="baseline" checked={baseline} onChange={onBaseline} />
        baseline
      </label>
    </div>
  );
}

export function CompareView({ runIds, baselineRunId }: { runIds: string[]; baselineRunId: string | null }) {
  const trpc = useTRPC();
  const router = useRouter();
  const enough = runIds.length >= COMPARE_MIN_RUNS && runIds.length <= COMPARE_MAX_RUNS && baselineRunId !== null;
  const q = useQuery(
    trpc.compare.runs.queryOptions(
      { runIds, baselineRunId: baselineRunId ?? "" },
      { enabled: enough, placeholderData: keepPreviousData, refetchInterval: (s) => (s.state.data?.runs.some((r) => isActiveStatus(r.status)) ? 10_000 : false) },
    ),
  );

  if (!enough) {
    return (
      <div className="p-6">
        <EmptyState title={`Pick ${COMPARE_MIN_RUNS} to ${COMPARE_MAX_RUNS} runs to compare`}>
          Select runs on the <Link href="/runs" className="underline">runs page</Link>, or use “Compare with…” on a run. This address names {runIds.length}.
        </EmptyState>
      </div>
    );
  }
  if (q.error && !q.data) {
    return (
      <div className="p-6">
        <ErrorBox title="Could not compare these runs">{q.error.data?.issues?.join("; ") ?? q.error.message}</ErrorBox>
      </div>
    );
  }
  if (!q.data) {
    return (
      <div className="p-6">
        <Spinner label="Loading runs…" />
      </div>
    );
  }
  const data = q.data;
  const baseline = data.baselineRunId;
  const baseIndex = data.runs.findIndex((r) => r.id === baseline);
  const go = (ids: string[], base: string) => router.replace(compareHref(ids, base), { scroll: false });

  return (
    <div className="min-h-0 flex-1 overflow-y-auto" data-testid="compare-view">
      <div className="border-b border-zinc-800 px-4 py-3">
        <div className="mb-2 flex items-baseline gap-3">
          <h1 className="text-[15px] font-semibold text-zinc-100">Compare {data.runs.length} runs</h1>
          {q.isFetching && <span className="text-[11px] text-zinc-600">refreshing…</span>}
        </div>
        <div className="flex flex-wrap gap-2">
          {data.runs.map((run, i) => (
            <RunLegend
              key={run.id}
              run={run}
              index={i}
              // The requested baseline, so the radio moves at once while the new deltas load.
              baseline={run.id === (baselineRunId ?? baseline)}
              onBaseline={() => go(runIds, run.id)}
              onRemove={
                data.runs.length > COMPARE_MIN_RUNS
                  ? () => {
                      const rest = runIds.filter((id) => id !== run.id);
                      go(rest, run.id === baseline ? rest[0]! : baseline);
                    }
                  : undefined
              }
            />
          ))}
        </div>
      </div>

      <Section title="Metrics">
        <MetricCharts runs={data.runs} />
      </Section>

      <Section title="Per-task reward vs the baseline" testId="compare-tasks">
        <TaskDeltas split={data.tasks.split} rows={data.tasks.rows} summary={data.tasks.summary} runs={data.runs} baselineRunId={baseline} />
      </Section>

      <Section title="Config" testId="compare-config">
        <ConfigDiff rows={data.configDiff} runs={data.runs} baselineIndex={baseIndex} />
      </Section>

      <Section title="Code" testId="compare-code">
        <CodeDiff runs={data.runs} baselineRunId={baseline} />
      </Section>
    </div>
  );
}
