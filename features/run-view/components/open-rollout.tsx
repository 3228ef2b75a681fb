"use client";
/**
 * The transcript pane of the rollout opened in the list or the group view. The page holds a summary of most
 * rollouts (rollout-summary.ts), so the whole trajectory is read when it is opened (whole-rollouts.ts); one
 * that arrived whole (live) shows at once, and follows a re-emitted trajectory since it is keyed by seq.
 */
import { ErrorBox, Spinner } from "@/components/ui/primitives";
import type { OpenFrame } from "./rollout-error";
import type { Rollout, RolloutGroup } from "./run-state";
import { RolloutDetail } from "./transcript";
import { useWholeRollouts } from "./whole-rollouts";

export function OpenRollout({
  rollout,
  group,
  onClose,
  onOpenFrame,
  runId,
  runKind,
  scaleRewards,
}: {
  /** The run's kind (RolloutDetail: an ART run's rollouts have no returned output). */
  runKind?: string;
  rollout: Rollout;
  scaleRewards?: boolean;
  group?: RolloutGroup;
  onClose?: () => void;
  onOpenFrame?: OpenFrame;
  runId: string;
}) {
  const { data, error } = useWholeRollouts(runId, [rollout]);
  const whole = data?.[0];
  if (whole) return <RolloutDetail rollout={whole} group={group} onClose={onClose} onOpenFrame={onOpenFrame} runId={runId} runKind={runKind} scaleRewards={scaleRewards} />;
  return (
    <div className="p-4" data-testid="rollout-detail-loading">
      <div className="mb-3 flex items-center gap-3">
        <h2 className="text-[14px] font-semibold text-zinc-100">
          {rollout.split === "val" ? "Eval rollout" : "Rollout"} · step {rollout.step} · group {rollout.group}
        </h2>
        {onClose && (
          <button type="button" onClick={onClose} aria-label="Close rollout" className="ml-auto rounded px-2 text-zinc-500 hover:bg-zinc-800 hover:text-zinc-200">
            ✕
          </button>
        )}
      </div>
      {error ? <ErrorBox title="Could not load the transcript">{error}</ErrorBox> : <Spinner label="Loading transcript…" />}
    </div>
  );
}
