"use client";
/**
 * One run, live: header (status, counts, error, Stop), training curves, and the rollouts as they finish
 * (list + transcript), the GRPO group view, the run's log and its frozen code. State is the run's event
 * log folded by run-state.ts; runs.get supplies what the log does not carry (number, files, counters).
 */
import { ArtClientLine, artIdleBadge } from "@/features/art";
import { useNow } from "@/components/ui/use-now";
import { runName } from "@/features/runs";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter, useSearchParams } from "next/navigation";
import { useEffect, useMemo, useState } from "react";
import { MEAN_REWARD_DEFINITION, isRunnerFault, latestTrainedStep, meanReward, SIGNALS, withAdvantages, type ExperimentFiles, type RunStatus } from "@contracts";
import { useTRPC } from "@/components/trpc";
import { useCan } from "@/components/auth/use-role";
import { fmtDateTime, fmtDuration, fmtInt, fmtNum, fmtSignal, toDate } from "@/components/ui/format";
import { Button, EmptyState, ErrorBox, KindBadge, Spinner, Stat, StatusBadge, Tabs } from "@/components/ui/primitives";
import { CompareWith } from "@/features/compare";
import { RunCharts } from "@/features/metrics";
import { CheckpointsButton } from "@/features/checkpoints";
import { ForkButton, RunLineage } from "./run-lineage";
import { GroupView } from "./group-view";
import { RolloutList } from "./rollout-list";
import { RolloutFilterBar } from "./rollout-filter-bar";
import { useRolloutFeed } from "./use-rollout-feed";
import { frameHref, type OpenFrame } from "./rollout-error";
import { RescoreButton } from "@/features/rescore";
import { RunExportMenu } from "./run-export-menu";
import type { FlagFocus } from "@/features/flags";
import { RunFlagsStrip } from "@/features/flags";
import { EMPTY_FILTER } from "./rollout-filter";
import { RunNotes, RunTags } from "@/features/runs";
import { RunCode, type CodeFocus } from "./run-code";
import { RunHealthNotes } from "./run-health";
import { groupKey, isTerminal, meanStd, rolloutAdvantage, runScalesRewards, type Rollout, type RolloutGroup, type RunLogLine } from "./run-state";
import { OpenRollout } from "./open-rollout";
import { fetchWholeRollouts } from "./whole-rollouts";
import { useRunStream } from "./use-run-stream";
import { errorCode, isNotFound, runPollInterval } from "./run-poll";
import { runActions } from "./run-actions";
import { knownRunKind } from "./run-kind";
import { DeliveryIndicator } from "./delivery-indicator";

type Tab = "rollouts" | "groups" | "logs" | "code";

/** `?tab=code&file=lib/check.ts&line=3&column=11` (a stack frame's link) opens the code there. */
function tabFromSearch(search: URLSearchParams): Tab {
  const t = search.get("tab");
  return t === "code" || t === "groups" || t === "logs" ? t : "rollouts";
}

function focusFromSearch(search: URLSearchParams): CodeFocus | null {
  const file = search.get("file");
  const line = Number(search.get("line"));
  if (search.get("tab") !== "code" || !file || !Number.isInteger(line) || line < 1) return null;
  return { file, line, column: Math.max(1, Number(search.get("column")) || 1), nonce: 0 };
}

export function RunView({ id }: { id: string }) {
  const trpc = useTRPC();
  // What the caller's role allows (contracts/actions.ts): a viewer watches, and is offered nothing that changes the run.
  const canStop = useCan("run.stop");
  const canResume = useCan("run.resume");
  const canEditTags = useCan("run.editTagsNotes");
  const canRescore = useCan("run.rescore");
  const canStartRun = useCan("run.start");
  const queryClient = useQueryClient();
  // "Not found" is said once and stays: no retry, no poll (a refetch would blank the answer meanwhile).
  const [notFound, setNotFound] = useState(false);
  const run = useQuery({
    ...trpc.runs.get.queryOptions(
      { id },
      // Asked again while the run lives, and slowly once it ended (run-poll.ts: a resume elsewhere is seen).
      { refetchInterval: (q) => runPollInterval(q.state.data?.status, q.state.error) },
    ),
    enabled: !notFound,
    retry: (count, error) => count < 1 && !isNotFound(error) && !/UNAUTHORIZED|FORBIDDEN/.test(String(errorCode(error))),
  });
  useEffect(() => {
    if (!run.data && isNotFound(run.error)) setNotFound(true);
  }, [run.data, run.error]);
  useEffect(() => setNotFound(false), [id]);
  const { state, phase, loadError, delivery, foldServerStatus } = useRunStream(id, run.data?.lastSeq ?? 0);
  // Every runs.get answer is folded with the log by attempt (status-fold.ts): a resume by anyone shows.
  const snapshot = run.data;
  useEffect(() => {
    if (snapshot) foldServerStatus({ status: snapshot.status as RunStatus, attempt: snapshot.attempt, lastSeq: snapshot.lastSeq });
  }, [snapshot, foldServerStatus]);
  const status = state.status;
  const now = useNow(10_000);

  // When the log says the run ended, read the final row once (error, counters, finishedAt).
  const terminal = isTerminal(state.status);
  useEffect(() => {
    if (terminal) void queryClient.invalidateQueries({ queryKey: trpc.runs.get.queryKey({ id }) });
  }, [terminal, queryClient, trpc, id]);

  const stop = useMutation(
    trpc.runs.stop.mutationOptions({
      onSettled: () => void queryClient.invalidateQueries({ queryKey: trpc.runs.get.queryKey({ id }) }),
    }),
  );

  const resume = useMutation(
    trpc.runs.resume.mutationOptions({
      onSettled: () => void queryClient.invalidateQueries({ queryKey: trpc.runs.get.queryKey({ id }) }),
    }),
  );
  const resumeError = resume.error?.message ?? (resume.data && !resume.data.ok ? resume.data.error : null);

  const search = useSearchParams();
  const [codeFocus, setCodeFocus] = useState<CodeFocus | null>(() => focusFromSearch(search));
  const [tab, setTabState] = useState<Tab>(() => tabFromSearch(search));
  const setTab = (t: Tab) => {
    setTabState(t);
    // The rollouts and groups tabs keep their place in the address (a flag's link names `tab=rollouts`).
    if (t === "rollouts" || t === "groups") {
      const q = new URLSearchParams(window.location.search);
      q.set("tab", t);
      for (const k of ["file", "line", "column"]) q.delete(k);
      window.history.replaceState(null, "", `?${q.toString()}`);
    }
  };
  const openFrame: OpenFrame = (f) => {
    setCodeFocus({ ...f, nonce: Date.now() });
    setTab("code");
    // The address says where we are, so a reload or a shared link opens the same line.
    window.history.replaceState(null, "", frameHref(f));
  };
  const feed = useRolloutFeed(id, state.rollouts, search, tab === "rollouts");
  const { selected } = feed;
  // A flag's link narrows the rollouts to what raised it: its rollouts, else its steps' train rollouts.
  const openFlag = (focus: FlagFocus) => {
    setTab("rollouts");
    const named = focus.rolloutIds.length > 0;
    feed.setFilter({ ...EMPTY_FILTER, ids: named ? focus.rolloutIds : null, steps: named ? null : focus.steps });
  };

  const trainRewards = useMemo(
    () => meanStd(state.rollouts.filter((r) => r.split === "train" && r.reward !== null).map((r) => r.reward!)),
    [state.rollouts],
  );

  const allRewards = useMemo(
    () => meanStd(state.rollouts.filter((r) => r.reward !== null).map((r) => r.reward!)),
    [state.rollouts],
  );

  if (notFound) {
    return (
      <div className="p-6">
        <ErrorBox title="Run not found">
          <span data-testid="run-not-found">There is no run {id} in this workspace.</span>
        </ErrorBox>
      </div>
    );
  }
  if (run.error && !run.data) {
    return (
      <div className="p-6">
        <ErrorBox title="Could not load the run">{run.error.message}</ErrorBox>
      </div>
    );
  }
  const r = run.data;
  const knownKind = knownRunKind(r, state.started);
  // The panels below need a layout before the kind is known; the badge and the actions wait for the real one.
  const kind = knownKind ?? "train";
  const config = r?.config ?? state.started?.config;
  const numSteps = kind === "train" ? config?.num_steps : undefined;
  const rolloutCount = Math.max(state.rollouts.length, r?.rolloutCount ?? 0);
  const errorCount = Math.max(state.errorCount, r?.errorCount ?? 0);
  // The rollouts the runner lost (engine_connection): said apart from the experiment's failures (run-health.tsx).
  const runnerErrorCount = state.rollouts.reduce((n, x) => n + (isRunnerFault(x.error?.kind) ? 1 : 0), 0);
  const lastStep = state.steps[state.steps.length - 1];
  const currentStep = Math.max(lastStep?.step ?? 0, r?.currentStep ?? 0);
  const latestEval = state.evals[state.evals.length - 1];
  const error = state.finished?.error ?? r?.error ?? null;
  const diagnostics = state.finished?.diagnostics.length ? state.finished.diagnostics : (r?.diagnostics ?? []);
  const active = status !== null && !isTerminal(status);
  const actions = runActions(status, knownKind ?? "unknown", { stop: canStop, resume: canResume });
  // contracts/mean-reward.ts: the same number as the runs table's (the folded log once loaded, else the row's).
  const headlineReward = state.rollouts.length > 0 ? meanReward(kind, state.rollouts) : (r?.rewardMean ?? null);
  const trained = latestTrainedStep(state.steps);
  const scaleRewards = runScalesRewards(state);
  // An ART run whose client went quiet reads "idle since …", not a live dot (art-idle.ts); its status stays running.
  const idle = r ? artIdleBadge({ kind, status, lastHeartbeatAt: r.lastHeartbeatAt }, now) : null;
  const name = r ? runName({ kind: r.kind, experimentName: r.experiment.name, versionNumber: r.version.number, artName: r.artClient?.name ?? null }) : null;
  const progress = active && state.trainProgress && state.trainProgress.step > (lastStep?.step ?? -1) ? state.trainProgress : null;

  return (
    <div className="flex min-h-0 flex-1 flex-col">
      {/* Header */}
      <div className="shrink-0 border-b border-zinc-800 px-4 py-2.5">
        <div className="flex flex-wrap items-center gap-3">
          <h1 className="text-[15px] font-semibold text-zinc-100">Run {r ? `#${r.number}` : ""}</h1>
          {knownKind && <KindBadge kind={knownKind} />}
          <StatusBadge status={status ?? "loading"} testId="run-status" kind={kind} idle={idle} />
          {r && (
            <Link href={`/experiments/${r.experiment.id}`} className="text-zinc-400 hover:text-zinc-200" data-testid="run-name">
              {name?.name} <span className="font-mono text-[12px] text-zinc-500">{name?.detail}</span>
            </Link>
          )}
          {r && <RunLineage runId={r.id} />}
          {r && (
            <span className="flex items-center gap-1.5">
              <RunTags runId={r.id} tags={r.tags} canEdit={canEditTags} />
              <RunNotes runId={r.id} notes={r.notes} canEdit={canEditTags} />
            </span>
          )}
          <DeliveryIndicator phase={phase} status={status} delivery={delivery} kind={kind} idle={idle !== null} />
          <div className="ml-auto flex items-center gap-2">
            {r && r.checkpoints.length > 0 && <CheckpointsButton runId={r.id} count={r.checkpoints.length} />}
            {r && <CompareWith runId={r.id} experimentId={r.experiment.id} />}
            {/* An ART run's code lives with its client: nothing here to fork (runs.fork refuses it too). */}
            {r && r.kind !== "art" && r.kind !== "tinker" && <ForkButton runId={r.id} />}
            {r && <RunExportMenu runId={r.id} />}
            {canRescore && r && rolloutCount > 0 && <RescoreButton runId={r.id} runNumber={r.number} files={r.version.files} lastStep={r.currentStep} />}
            {canStartRun && r && r.kind === "train" && r.checkpoints.length > 0 && (
              <EvalCheckpoint
                experimentId={r.experiment.id}
                runId={r.id}
                files={r.version.files}
                steps={r.checkpoints.map((c) => c.step)}
              />
            )}
            {r && actions.resume && (
              <Button
                onClick={() => resume.mutate({ id })}
                disabled={resume.isPending}
                title={
                  state.status === "lost"
                    ? "Continue from the newest checkpoint; on the configured runner when this run's runner still does not answer"
                    : "Continue from the newest checkpoint"
                }
              >
                {resume.isPending ? "Resuming…" : "Resume"}
              </Button>
            )}
            {actions.stop && (
              <Button variant="danger" onClick={() => stop.mutate({ id })} disabled={stop.isPending}>
                {stop.isPending ? "Stopping…" : "Stop"}
              </Button>
            )}
          </div>
        </div>
        {r?.artClient && <ArtClientLine client={r.artClient} kind={r.kind} />}
        <div className="mt-2 flex flex-wrap gap-x-7 gap-y-2">
          <Stat
            label="Steps"
            value={numSteps ? `${Math.max(state.steps.length, r?.steps.length ?? 0)} / ${numSteps}` : currentStep}
            title={`current step ${currentStep}`}
          />
          <Stat label="Rollouts" value={fmtInt(rolloutCount)} />
          <Stat label="Errors" value={<span className={errorCount > 0 ? "text-red-300" : undefined}>{fmtInt(errorCount)}</span>} />
          <Stat label="Mean reward" value={fmtNum(headlineReward)} title={MEAN_REWARD_DEFINITION} />
          {latestEval && <Stat label="Eval reward" value={fmtNum(latestEval.reward_mean)} title={`at step ${latestEval.step}`} />}
          <Stat label="Model" value={<span className="text-[12px]">{r?.evalModel ?? state.started?.model ?? r?.baseModel ?? "—"}</span>} />
          <Stat label="Started" value={<span className="text-[12px]">{fmtDateTime(r?.startedAt ?? r?.createdAt)}</span>} />
          <Stat
            label="Duration"
            value={<span className="text-[12px]">{fmtDuration(r?.startedAt ?? r?.createdAt, toDate(r?.finishedAt) ?? (active ? Date.now() : null))}</span>}
          />
          {progress && (
            <Stat
              label={`Training step ${progress.step}`}
              value={`micro-batch ${progress.micro_batch}/${progress.micro_batches}`}
              title="The step's loss is known when the step finishes (a micro-batch's own loss is not the step's)"
            />
          )}
          {trained && (
            <span data-testid="live-step-loss" className="contents">
              <Stat label={`${SIGNALS.loss.label} · step ${trained.step}`} value={fmtSignal(trained.loss)} title={SIGNALS.loss.definition} />
              <Stat label={`${SIGNALS.kl.label} · step ${trained.step}`} value={fmtSignal(trained.kl)} title={SIGNALS.kl.definition} />
            </span>
          )}
        </div>
        <RunFlagsStrip runId={id} onOpen={openFlag} />
        {status === "failed" && (error || diagnostics.length > 0) && (
          <div className="mt-2">
            <ErrorBox title="Run failed">
              {/* The error usually summarises the first diagnostic: show it only when it says more. */}
              {error && !(diagnostics[0] && error.includes(diagnostics[0].message) && diagnostics.length > 0 && error.length < diagnostics[0].message.length + 80) && (
                <div className="font-mono break-words whitespace-pre-wrap">{error}</div>
              )}
              {diagnostics.length > 0 && (
                <ul className="mt-1 space-y-0.5 font-mono">
                  {diagnostics.map((d, i) => (
                    <li key={i}>
                      {d.file}:{d.line}:{d.column} {d.message}
                    </li>
                  ))}
                </ul>
              )}
            </ErrorBox>
          </div>
        )}
        {status === "stopped" && <div className="mt-2 text-[12px] text-amber-300">Stopped{error ? `: ${error}` : "."}</div>}
        <RunHealthNotes status={status ?? "loading"} kind={kind} lostSince={r?.lostSince ?? null} queuePosition={r?.queuePosition ?? null} rolloutCount={rolloutCount} errorCount={errorCount} runnerErrorCount={runnerErrorCount} logs={state.logs} />
        {stop.error && <div className="mt-2 text-[12px] text-red-300">Stop failed: {stop.error.message}</div>}
        {resumeError && <div className="mt-2 text-[12px] text-red-300">Resume failed: {resumeError}</div>}
        {loadError && <div className="mt-2 text-[12px] text-amber-300">Stored events could not be read ({loadError}); showing the live stream.</div>}
      </div>

      {/* Charts */}
      <div className="shrink-0 border-b border-zinc-800 px-4 py-2">
        {kind === "eval" ? (
          <div className="text-[12px] text-zinc-500">
            Eval of <span className="font-mono text-zinc-300">{r?.evalModel ?? state.started?.model ?? "the base model"}</span> on the
            validation tasks, no training.
            {latestEval ? (
              <>
                {" "}
                Reward <span className="font-mono text-zinc-300">{fmtNum(latestEval.reward_mean)}</span> ± {fmtNum(latestEval.reward_std)} over{" "}
                {fmtInt(latestEval.rollouts)} rollouts, exception rate {fmtNum(latestEval.exception_rate, 2)}.
              </>
            ) : (
              allRewards && (
                <>
                  {" "}
                  Mean reward so far <span className="font-mono text-zinc-300">{fmtNum(allRewards?.mean)}</span> ± {fmtNum(allRewards?.std)}.
                </>
              )
            )}
          </div>
        ) : kind === "dry-run" ? (
          <div className="text-[12px] text-zinc-500">
            Dry run: one step of rollouts and rewards, no training — so no training curves.
            {trainRewards && (
              <>
                {" "}
                Mean reward <span className="font-mono text-zinc-300">{fmtNum(trainRewards.mean)}</span> ± {fmtNum(trainRewards.std)} over{" "}
                {fmtInt(state.rollouts.filter((x) => x.reward !== null).length)} scored rollouts.
              </>
            )}
          </div>
        ) : (
          <RunCharts runId={id} seen={state.steps.length + state.evals.length} klMeasured={(config?.trainer.beta ?? 0) > 0} />
        )}
      </div>

      <Tabs
        label="Run views"
        className="shrink-0 px-2"
        value={tab}
        onChange={setTab}
        tabs={[
          { id: "rollouts", label: <>Rollouts <Count n={state.rollouts.length} /></> },
          { id: "groups", label: <>Groups <Count n={state.groupList.length} /></> },
          { id: "logs", label: <>Logs <Count n={state.logs.length} /></> },
          { id: "code", label: "Config & code" },
        ]}
      />

      <div className="flex min-h-0 flex-1">
        {tab === "rollouts" || tab === "groups" ? (
          <>
            <div className={`flex min-h-0 min-w-0 flex-col ${selected ? "w-1/2 border-r border-zinc-800" : "flex-1"}`}>
              {tab === "rollouts" ? (
                <>
                  <RolloutFilterBar
                    filter={feed.filter}
                    onChange={feed.setFilter}
                    steps={feed.steps}
                    tags={feed.tags}
                    shown={feed.visible.length}
                    total={state.rollouts.length}
                  />
                  <div className="flex shrink-0 items-center gap-3 border-b border-zinc-800 px-3 py-1 text-[12px] text-zinc-400">
                    <label className="flex items-center gap-1.5">
                      <input type="checkbox" checked={feed.newestFirst} onChange={(e) => feed.setNewestFirst(e.target.checked)} />
                      newest first
                    </label>
                    <label className="flex items-center gap-1.5" title="Keep the newest rollout in view (and open, if a transcript is open) as rollouts arrive">
                      <input type="checkbox" data-testid="follow-live" checked={feed.follow} onChange={(e) => feed.setFollow(e.target.checked)} />
                      follow live
                    </label>
                    <span className="ml-auto text-zinc-600">j / k move · Enter or o open · Esc close</span>
                    <ExportJsonlButton runId={id} name={`run-${r?.number ?? id}-rollouts.jsonl`} rollouts={feed.visible} groups={state.groups} scaleRewards={scaleRewards} />
                  </div>
                  {state.rollouts.length === 0 ? (
                    <div className="p-4">
                      {phase === "loading" ? (
                        <Spinner label="Loading events…" />
                      ) : (
                        <EmptyState title={active ? "Waiting for the first rollout…" : "No rollouts"}>
                          {active ? "Rollouts appear here as soon as each one finishes." : "This run finished before any rollout completed."}
                        </EmptyState>
                      )}
                    </div>
                  ) : feed.visible.length === 0 && feed.searching ? (
                    <div className="p-4">
                      <Spinner label="Searching…" />
                    </div>
                  ) : feed.visible.length === 0 ? (
                    <div className="p-4">
                      <EmptyState title="No rollout matches these filters">{`${state.rollouts.length} rollouts in the run; clear a filter to see them.`}</EmptyState>
                    </div>
                  ) : (
                    <RolloutList
                      rollouts={feed.visible}
                      groups={state.groups}
                      selectedId={feed.cursorId}
                      onSelect={feed.moveTo}
                      onOpen={feed.open}
                      follow={feed.follow ? (feed.newestFirst ? "start" : "end") : null}
                      onUserScroll={() => feed.setFollow(false)}
                      scaleRewards={scaleRewards}
                    />
                  )}
                </>
              ) : (
                <GroupView
                  runId={id}
                  groups={state.groupList}
                  rollouts={state.rollouts}
                  selectedId={feed.openId}
                  onSelect={feed.open}
                  initialStep={feed.filter.step}
                  scaleRewards={scaleRewards}
                />
              )}
            </div>
            {selected && (
              <div className="min-h-0 w-1/2 overflow-auto">
                <OpenRollout rollout={selected} group={state.groups[groupKey(selected)]} onClose={feed.close} onOpenFrame={openFrame} runId={id} runKind={knownKind ?? undefined} scaleRewards={scaleRewards} />
              </div>
            )}
          </>
        ) : tab === "logs" ? (
          <LogView logs={state.logs} />
        ) : r ? (
          <RunCode
            focus={codeFocus}
            files={r.version.files}
            config={r.config}
            meta={[
              ["experiment", `${r.experiment.name} v${r.version.number}`],
              ["base model", r.baseModel],
              ["seed", String(r.seed)],
              ...(r.evalModel ? ([["eval model", r.evalModel]] as [string, string][]) : []),
              ["code hash", r.codeHash.slice(0, 16)],
              ["tasks hash", r.tasksHash.slice(0, 16)],
              // The address only reaches those who see the runner's details (the instance's operator, its workspace's admins).
              ["runner", r.runner ? (r.runner.url ? `${r.runner.name} (${r.runner.url})` : r.runner.name) : "—"],
              ["checkpoints", r.checkpoints.length ? r.checkpoints.map((c) => c.step).join(", ") : "none"],
              ["created", fmtDateTime(r.createdAt)],
              ["run id", r.id],
            ]}
          />
        ) : (
          <div className="p-4">
            <Spinner />
          </div>
        )}
      </div>
    </div>
  );
}

/** Evaluate one of this run's checkpoints on the validation tasks (an eval run of the same frozen files). */
function EvalCheckpoint({ experimentId, runId, files, steps }: { experimentId: string; runId: string; files: ExperimentFiles; steps: number[] }) {
  const trpc = useTRPC();
  const router = useRouter();
  // null = "the newest": follows new checkpoints as the run goes on until the user picks one.
  const [picked, setPicked] = useState<number | null>(null);
  const newest = steps[steps.length - 1] ?? 0;
  const step = picked !== null && steps.includes(picked) ? picked : newest;
  const start = useMutation(trpc.runs.start.mutationOptions());
  return (
    <div className="flex items-center gap-1.5">
      {start.data && !start.data.ok && <span className="max-w-64 truncate text-[12px] text-red-300" title={start.data.error}>{start.data.error}</span>}
      {start.error && <span className="text-[12px] text-red-300">{start.error.message}</span>}
      <select
        aria-label="Checkpoint"
        value={step}
        onChange={(e) => setPicked(Number(e.target.value) === newest ? null : Number(e.target.value))}
        className="h-7 rounded border border-zinc-700 bg-zinc-900 px-1.5 text-[12px] text-zinc-200"
      >
        {steps.map((s) => (
          <option key={s} value={s}>
            step {s}
            {s === newest ? " (latest)" : ""}
          </option>
        ))}
      </select>
      <Button
        disabled={start.isPending}
        onClick={() =>
          start.mutate(
            { experimentId, files, kind: "eval", evalModel: `${runId}@${step}` },
            { onSuccess: (res) => res.ok && router.push(`/runs/${res.runId}`) },
          )
        }
      >
        Eval checkpoint
      </Button>
    </div>
  );
}

/** The rollouts as shown (filters applied), one whole trajectory per line, as a file download. */
function ExportJsonlButton({
  runId,
  name,
  rollouts,
  groups,
  scaleRewards,
}: {
  runId: string;
  name: string;
  rollouts: readonly Rollout[];
  groups: Readonly<Record<string, RolloutGroup>>;
  scaleRewards: boolean;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = async () => {
    setBusy(true);
    setError(null);
    try {
      // The page holds summaries: the export reads the whole trajectories (in slices) first.
      const whole = await fetchWholeRollouts(runId, rollouts);
      downloadJsonl(
        name,
        // Both advantages, as the panel shows them and the server's JSONL export writes them.
        whole.map(({ reply: _reply, ...t }) => withAdvantages(t, rolloutAdvantage(t.id, groups[groupKey(t)], scaleRewards))),
      );
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      {error && <span className="text-red-300">Export failed: {error}</span>}
      <Button variant="ghost" disabled={busy || rollouts.length === 0} onClick={() => void run()}>
        {busy ? "Exporting…" : "Export JSONL"}
      </Button>
    </>
  );
}

function downloadJsonl(name: string, rollouts: readonly object[]) {
  const text = rollouts.map((r) => JSON.stringify(r)).join("\n") + "\n";
  const url = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1_000);
}

function Count({ n }: { n: number }) {
  return <span className="rounded bg-zinc-800 px-1.5 text-[11px] text-zinc-400 tabular-nums">{n}</span>;
}

const LEVEL_STYLE: Record<RunLogLine["level"], string> = {
  info: "text-zinc-400",
  warn: "text-amber-300",
  error: "text-red-300",
};

function LogView({ logs }: { logs: readonly RunLogLine[] }) {
  if (logs.length === 0) {
    return (
      <div className="flex-1 p-4">
        <EmptyState title="No log lines yet" />
      </div>
    );
  }
  return (
    <div className="min-h-0 flex-1 overflow-auto p-3 font-mono text-[12px]" data-testid="run-logs">
      {logs.slice(-5_000).map((l) => (
        <div key={l.seq} className="flex gap-3 leading-5">
          <span className="shrink-0 text-zinc-600">{new Date(l.ts).toLocaleTimeString("en-US", { hour12: false })}</span>
          <span className={`w-10 shrink-0 ${LEVEL_STYLE[l.level]}`}>{l.level}</span>
          <span className="break-words whitespace-pre-wrap text-zinc-200">{l.message}</span>
        </div>
      ))}
    </div>
  );
}
