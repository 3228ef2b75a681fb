/**
 * POST /preview/training-jobs and GET /preview/training-jobs/{id}/events: ART's `backend.train(model, groups)`.
 *
 * A job is one GRPO step of the model's run, step S = its newest checkpoint + 1, trained on the run's runner
 * (bound at its first job: the runner whose engine serves the base model) through the runner's
 * externalTrain (gpu-runner/src/loop/external-train.ts), which rebuilds the exact sampled tokens. In order:
 *
 *   1. the request is checked (config mapped: art-train-config.ts; tools; a job already training is a 409)
 *      and the groups are stored as step S's rollouts at once — live on the run page before the step trains —
 *      with a run.log line naming the job and its ART config; the answer is {id} (ART then polls events);
 *   2. in this process, the runner's lines become the job's events (what ART's client pages through) and
 *      the run's: prepared → training_started {num_sequences}, and the rollouts stored again with the prompt
 *      token counts the runner measured (art-prompt-tokens.ts); progress → train.progress (the live page's
 *      progress); result → checkpoint.saved + step.finished (the trainer's metrics) and gradient_step
 *      {metrics} + training_ended; any failure → training_failed {error_message} and a run.log error.
 *
 * The job row (ArtTrainingJob) holds the events, so any web process answers the polls. The process that
 * trains it touches the row every JOB_TOUCH_MS; an unfinished job not touched for JOB_STALE_MS lost that
 * process (a restart) and is answered as failed, saying so: the step may still have been saved, which
 * `get_step()` (the checkpoints) tells.
 */
import { computeStepMetrics, ExternalTrainLine, RunConfig, RunEvent, type ExternalTrainRequest, type Trajectory } from "@contracts";
import { AppError, rootMessage } from "@/server/errors";
import { resolveRunner, runnerFetch } from "@/server/runner-client";
import type { Db } from "@/server/db-types";
import type { Prisma } from "@/generated/prisma/client";
import { errorMessage, resolveBaseModel } from "@/features/checkpoints/server";
import { recordSignOfLife } from "@/features/run-lifecycle/server";
import type { ArtJobEvent, TrainingJobBody } from "../schema";
import { appendEvents } from "./art-log";
import type { ArtRun } from "./art-models";
import { ArtTrainInputError, externalGroupsOf } from "./art-external";
import { mapArtConfig } from "./art-train-config";
import { withPromptTokens } from "./art-prompt-tokens";
import { rolloutsOf } from "./art-transcript";

export const JOB_TOUCH_MS = 10_000;
export const JOB_STALE_MS = 90_000;
/** The longest one step may train before the job gives up on it (a 7B step on one GPU takes minutes). */
const STEP_TIMEOUT_MS = 2 * 60 * 60_000;

type JobStatus = "queued" | "training" | "ended" | "failed";
const UNFINISHED: JobStatus[] = ["queued", "training"];

export type CreateJobOutcome = { ok: true; id: string; step: number } | { ok: false; status: 400 | 409 | 503; message: string; param: string | null };

/** Appends run events (numbered after the run's lastSeq: art-log.ts appendEvents). */
function appendRunEvents(db: Db, runId: string, inputs: { type: RunEvent["type"]; payload: unknown }[]) {
  return appendEvents(db, runId, (at) => ({
    events: inputs.map((e, i) => RunEvent.parse({ run_id: runId, seq: at.lastSeq + 1 + i, ts: at.now, attempt: at.attempt, type: e.type, payload: e.payload })),
    result: {},
  }));
}

async function jobEvents(db: Db, id: string, add: Omit<ArtJobEvent, "id">[], patch: { status?: JobStatus; error?: string } = {}): Promise<void> {
  // One writer per job (the process training it), so read-append-write cannot lose an event.
  const row = await db.artTrainingJob.findUniqueOrThrow({ where: { id }, select: { events: true } });
  const events = row.events as ArtJobEvent[];
  const next = [...events, ...add.map((e, i) => ({ id: `${id}-${events.length + i + 1}`, ...e }))];
  await db.artTrainingJob.update({ where: { id }, data: { events: next as unknown as Prisma.InputJsonValue, ...patch } });
}

/** Whether an unfinished job is still being trained by some web process. */
const isStale = (job: { status: string; updatedAt: Date }) => UNFINISHED.includes(job.status as JobStatus) && Date.now() - job.updatedAt.getTime() > JOB_STALE_MS;

async function runnerFor(db: Db, workspaceId: string, run: { runnerId: string | null; baseModel: string }): Promise<string> {
  if (run.runnerId) return run.runnerId;
  // The runner that serves this base model for the workspace (its engine has it loaded), else the configured one.
  const base = await resolveBaseModel(db, workspaceId, run.baseModel);
  return base.runnerId ?? (await resolveRunner(db, undefined, workspaceId)).id;
}

/** Step 1 of the file comment: checks, the job row, the rollouts stored; then the step starts training here. */
export async function createTrainingJob(db: Db, workspaceId: string, art: ArtRun, body: TrainingJobBody): Promise<CreateJobOutcome> {
  const run = await db.run.findUniqueOrThrow({ where: { id: art.id }, select: { config: true, runnerId: true, baseModel: true, seed: true, lastSeq: true } });
  // The request's own faults first: a bad config is a 400 whatever the model is doing (a running job's 409 below).
  const config = RunConfig.parse(run.config);
  const mapped = mapArtConfig(config.trainer, body.experimental_config);
  if (!mapped.ok) return { ok: false, status: 400, message: mapped.message, param: mapped.param };
  const busy = await db.artTrainingJob.findFirst({ where: { runId: art.id, status: { in: UNFINISHED } }, orderBy: { createdAt: "desc" } });
  if (busy && !isStale(busy)) return { ok: false, status: 409, message: `model ${art.id} is training already (training job ${busy.id}, step ${busy.step}): wait for it to end`, param: null };
  const newest = await db.checkpoint.findFirst({ where: { runId: art.id }, orderBy: { step: "desc" }, select: { step: true } });
  const step = (newest?.step ?? 0) + 1;
  const logged = await db.step.findFirst({ where: { runId: art.id, step: { gte: step } }, orderBy: { step: "desc" }, select: { step: true } });
  if (logged) {
    return {
      ok: false,
      status: 409,
      message: `model ${art.id} has logged steps up to ${logged.step} without training (models.log with split "train"); its next trained step would be ${step}: train a new model, or keep this one log-only`,
      param: "model_id",
    };
  }
  const trainable = body.trajectory_groups.filter((g) => g.trajectories.length >= 2).length;
  if (trainable === 0) return { ok: false, status: 400, message: "trajectory_groups: no group has 2 or more trajectories: GRPO compares the trajectories of a group, so nothing would train", param: "trajectory_groups" };

  const now = Date.now();
  const lastSeq = run.lastSeq;
  // Ids unique across calls (their first seq), as art-log.ts numbers logged rollouts.
  const groups = rolloutsOf(body.trajectory_groups, { idPrefix: `art-${art.id}-${lastSeq + 1}`, step, split: "train", model: step === 1 ? art.baseModel : `${art.id}@${step - 1}`, now });
  let external;
  try {
    external = externalGroupsOf(body.trajectory_groups, groups.map((g) => g.map((t) => t.id)));
  } catch (err) {
    if (err instanceof ArtTrainInputError) return { ok: false, status: 400, message: err.message, param: err.param };
    throw err;
  }
  let runnerId: string;
  try {
    runnerId = await runnerFor(db, workspaceId, run);
  } catch (err) {
    return { ok: false, status: 503, message: `no runner can train model ${art.id}: ${rootMessage(err)}`, param: null };
  }
  const job = await db.artTrainingJob.create({ data: { runId: art.id, step, artConfig: { sent: body.experimental_config ?? {}, applied: mapped.applied } as object } });
  if (!run.runnerId) await db.run.update({ where: { id: art.id }, data: { runnerId } });
  const configText = Object.keys(mapped.applied).length ? Object.entries(mapped.applied).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ") : "the run's trainer settings";
  await appendRunEvents(db, art.id, [
    { type: "run.log", payload: { level: "info", message: `ART training job ${job.id}: step ${step}, ${body.trajectory_groups.length} groups; ART config: ${configText}${mapped.recomputeLogprobs ? ", precalculate_logprobs" : ""}` } },
    ...groups.flat().map((t) => ({ type: "rollout.finished" as const, payload: t })),
  ]);
  const request: ExternalTrainRequest = {
    run_id: art.id,
    workspace_id: workspaceId,
    step,
    base_model: art.baseModel,
    seed: run.seed,
    config: mapped.trainer,
    groups: external,
    recompute_logprobs: mapped.recomputeLogprobs,
  };
  void trainJob(db, job.id, runnerId, request, groups).catch((err: unknown) => {
    process.stderr.write(`ART training job ${job.id}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  });
  return { ok: true, id: job.id, step };
}

/**
 * The runner's lines, one at a time: its POST /external-train answers NDJSON (gpu-runner/src/http/routes.ts).
 * A line Rollbook cannot read is the runner's error; the stream cut short is the caller's (the job fails).
 */
async function* runnerLines(db: Db, runnerId: string, request: ExternalTrainRequest): AsyncGenerator<ExternalTrainLine> {
  const res = await runnerFetch(db, runnerId, "/external-train", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(request),
    signal: AbortSignal.timeout(STEP_TIMEOUT_MS),
  });
  if (!res.ok || !res.body) throw new AppError("RUNNER_ERROR", `the runner refused the step (${res.status}): ${await errorMessage(res)}`);
  const decoder = new TextDecoder();
  let buffer = "";
  const parse = (text: string): ExternalTrainLine => {
    const line = ExternalTrainLine.safeParse(JSON.parse(text));
    if (!line.success) throw new AppError("RUNNER_ERROR", `the runner sent a training line Rollbook does not read: ${text.slice(0, 200)}`);
    return line.data;
  };
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const text = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (text) yield parse(text);
    }
  }
  if (buffer.trim()) yield parse(buffer.trim());
}

const numeric = (m: Record<string, unknown>) => Object.fromEntries(Object.entries(m).flatMap(([k, v]) => (typeof v === "number" ? [[k, v]] : typeof v === "boolean" ? [[k, Number(v)]] : [])));

/** Step 2 of the file comment. Never throws for the runner's or the engine's failures: the job fails, saying why. */
async function trainJob(db: Db, id: string, runnerId: string, request: ExternalTrainRequest, groups: Trajectory[][]): Promise<void> {
  const runId = request.run_id;
  const t0 = performance.now();
  let lastProgress = 0;
  const touch = setInterval(() => {
    void db.artTrainingJob.update({ where: { id }, data: { updatedAt: new Date() } }).catch(() => undefined);
    void recordSignOfLife(db, runId, "running").catch(() => undefined);
  }, JOB_TOUCH_MS);
  const fail = async (message: string) => {
    await jobEvents(db, id, [{ type: "training_failed", data: { error_message: message } }], { status: "failed", error: message });
    await appendRunEvents(db, runId, [{ type: "run.log", payload: { level: "error", message: `ART training job ${id} (step ${request.step}) failed: ${message}` } }]);
  };
  try {
    for await (const line of runnerLines(db, runnerId, request)) {
      if (line.type === "prepared") {
        await jobEvents(db, id, [{ type: "training_started", data: { num_sequences: line.num_sequences } }], { status: "training" });
        const skipped = line.skipped.length ? `; not trained: ${line.skipped.slice(0, 5).map((s) => `${s.id} (${s.reason})`).join(", ")}${line.skipped.length > 5 ? ` and ${line.skipped.length - 5} more` : ""}` : "";
        // The runner rendered every prompt (engine /tokenize): the rollouts again, now with their prompt counts.
        const counted = withPromptTokens(groups.flat(), line.prompt_tokens);
        await appendRunEvents(db, runId, [
          ...counted.map((t) => ({ type: "rollout.finished" as const, payload: t })),
          {
            type: "run.log",
            payload: {
              level: line.retokenized_replies > 0 ? "warn" : "info",
              message: `step ${request.step}: ${line.num_sequences} sequences from ${line.trajectories} trajectories; ${line.exact_replies} replies trained on their sampled tokens${line.served_prompt_replies > 0 ? ` (${line.served_prompt_replies} after the prompt the engine fed them, a forced call's prefill included)` : ""}, ${line.retokenized_replies} re-tokenised through the chat template (sampled without token ids)${skipped}`,
            },
          },
        ]);
      } else if (line.type === "progress") {
        // At most a few a second: the page's progress bar, not a log of every micro-batch on a fast GPU.
        if (performance.now() - lastProgress < 250 && line.micro_batch < line.micro_batches) continue;
        lastProgress = performance.now();
        await appendRunEvents(db, runId, [{ type: "train.progress", payload: { step: request.step, micro_batch: line.micro_batch, micro_batches: line.micro_batches, loss: line.loss } }]);
      } else if (line.type === "result") {
        const stepS = (performance.now() - t0) / 1000;
        await appendRunEvents(db, runId, [
          { type: "checkpoint.saved", payload: line.checkpoint },
          // The rollouts were sampled by the client before the job: their time is not Rollbook's to know (null).
          { type: "step.finished", payload: computeStepMetrics(request.step, groups, line.metrics, { rolloutS: null, trainS: stepS, stepS }) },
        ]);
        const metrics = line.metrics ? numeric(line.metrics as unknown as Record<string, unknown>) : {};
        await jobEvents(db, id, [
          { type: "gradient_step", data: metrics },
          { type: "training_ended", data: { step: request.step } },
        ], { status: "ended" });
        return;
      } else {
        await fail(line.message);
        return;
      }
    }
    await fail("the runner ended the step's stream without a result");
  } catch (err) {
    await fail(rootMessage(err)).catch(() => undefined);
  } finally {
    clearInterval(touch);
  }
}

/**
 * GET …/training-jobs/{id}/events: ART's cursor page of the job's events after `after` (an event id). A job
 * whose process went away answers one training_failed saying so (and is marked failed).
 */
export async function listJobEvents(db: Db, workspaceId: string, id: string, q: { after?: string; limit: number }) {
  const job = await db.artTrainingJob.findFirst({ where: { id, run: { workspaceId } }, select: { id: true, step: true, status: true, events: true, updatedAt: true } });
  if (!job) return null;
  let events = job.events as ArtJobEvent[];
  if (isStale(job)) {
    const message = `the web server training step ${job.step} stopped answering (restarted?); the step may have been saved: model.get_step() says (the model's checkpoints)`;
    await jobEvents(db, id, [{ type: "training_failed", data: { error_message: message } }], { status: "failed", error: message });
    events = [...events, { id: `${id}-${events.length + 1}`, type: "training_failed", data: { error_message: message } }];
  }
  const start = q.after ? events.findIndex((e) => e.id === q.after) + 1 : 0;
  const page = events.slice(start, start + q.limit);
  return { object: "list", data: page, has_more: start + q.limit < events.length, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null };
}
