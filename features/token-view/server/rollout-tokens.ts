/**
 * One rollout's tokens for the token view (runs.rolloutTokens): asked of the run's runner, which joins its
 * recorded token sequences, the trainer's logprobs and the engine's decoded texts
 * (gpu-runner/src/http/rollout-tokens.ts). Scoped to the workspace: another workspace's run is "not found".
 */
import { RolloutTokens } from "@contracts";
import { AppError, isAppError } from "@/server/errors";
import { runnerFetch } from "@/server/runner-client";
import { frozenScaleRewards, runAdvantages } from "@/server/run-advantages";
import type { DbOrTx } from "@/server/db-types";

/** The runner reads two local files and asks its engine for the texts: this is plenty. */
const TIMEOUT_MS = 30_000;

export async function getRolloutTokens(db: DbOrTx, workspaceId: string, input: { runId: string; rolloutId: string }): Promise<RolloutTokens> {
  const run = await db.run.findFirst({ where: { id: input.runId, workspaceId }, select: { id: true, number: true, runnerId: true, config: true } });
  if (!run) throw new AppError("NOT_FOUND", `run ${input.runId} not found`);
  const rollout = await db.trajectory.findUnique({ where: { runId_id: { runId: run.id, id: input.rolloutId } }, select: { id: true, step: true, group: true } });
  if (!rollout) throw new AppError("NOT_FOUND", `run #${run.number} has no rollout ${input.rolloutId}`);
  if (!run.runnerId) throw new AppError("NOT_FOUND", `run #${run.number} never reached a runner: it has no token record`);
  let res: Response;
  let text: string;
  try {
    res = await runnerFetch(db, run.runnerId, `/runs/${encodeURIComponent(run.id)}/rollouts/${encodeURIComponent(rollout.id)}/tokens`, {
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    text = await res.text();
  } catch (e) {
    if (isAppError(e)) throw e;
    throw new AppError("RUNNER_UNAVAILABLE", `run #${run.number}'s runner did not answer for the rollout's tokens: ${(e as Error).message}`);
  }
  if (res.status === 404) {
    throw new AppError("NOT_FOUND", `rollout ${rollout.id} of run #${run.number} has no token record on its runner (runs from before token recording, or a rollout that failed before sampling)`);
  }
  if (res.status === 503) throw new AppError("RUNNER_UNAVAILABLE", `run #${run.number}'s runner could not decode the tokens now: ${runnerMessage(text)}`);
  if (!res.ok) throw new AppError("RUNNER_ERROR", `run #${run.number}'s runner answered ${res.status} for the rollout's tokens: ${runnerMessage(text)}`);
  const parsed = RolloutTokens.safeParse(JSON.parse(text));
  if (!parsed.success) throw new AppError("RUNNER_ERROR", `run #${run.number}'s runner sent malformed tokens: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  // The raw advantage beside the trainer's, from the same definition the rollout panel uses.
  const scaleRewards = frozenScaleRewards(run.config);
  const raw = (await runAdvantages(db, run.id, scaleRewards, { step: rollout.step, group: rollout.group })).get(rollout.id)?.raw ?? null;
  return { ...parsed.data, training: { ...parsed.data.training, raw_advantage: raw, scale_rewards: scaleRewards } };
}

/** The runner's error bodies are OpenAI-shaped ({ error: { message } }). */
function runnerMessage(text: string): string {
  try {
    const m = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof m === "string") return m;
  } catch {
    // not JSON
  }
  return text.slice(0, 300);
}
