/**
 * The runner's API (RunnerRouter), used by the web server through createRunnerClient (client.ts).
 *   validate({files, kind})        mutation      → {ok, diagnostics}          (creates nothing)
 *   start(RunSpec)                 mutation      → StartResult                (refuses with diagnostics)
 *   stop({run_id, attempt?})       mutation      → {stopped}                  (resolves once it has ended)
 *   rescore(RescoreRequest)        mutation      → RescoreResponse            (a what-if: writes nothing)
 *   status()                       query         → RunnerStatus
 *   events({run_id, after_seq})    subscription  → RunEvent, tracked by seq   (resume with lastEventId)
 *   eventBatches({run_id, after_seq}) subscription → RunEvent[], tracked by the last seq (the web server's:
 *                                                   a catching-up reader gets hundreds of events a message)
 */
import { tracked, TRPCError } from "@trpc/server";
import { z } from "zod";
import { Diagnostic, ExperimentFiles, RescoreRequest, RescoreResponse, RunKind, RunnerStatus, RunSpec, StartResult } from "../../contracts";
import { engineNotices } from "./engine/backend-notice";
import { authedProcedure, router } from "./trpc";

export const ValidateOutput = z.object({ ok: z.boolean(), diagnostics: z.array(Diagnostic) });

export const EventsInput = z.object({
  run_id: z.string().min(1),
  /** Yield events with seq > after_seq (0 = from the start). */
  after_seq: z.number().int().min(0).default(0),
  /** Set by tRPC's SSE client on reconnect: the seq of the last event it received. Wins when larger. */
  lastEventId: z.string().nullish(),
});

export const runnerRouter = router({
  validate: authedProcedure
    .input(z.object({ files: ExperimentFiles, kind: RunKind }))
    .output(ValidateOutput)
    // A mutation, not a query: files travel in the request body (a query would put up to 8 MB in the URL).
    .mutation(({ ctx, input }) => ctx.manager.validate(input.files, input.kind)),

  start: authedProcedure
    .input(RunSpec)
    .output(StartResult)
    .mutation(({ ctx, input }) => ctx.manager.start(input)),

  stop: authedProcedure
    // attempt: stop only that attempt (the web server's late stop of an attempt must not end a newer one).
    .input(z.object({ run_id: z.string().min(1), attempt: z.number().int().min(1).optional() }))
    .output(z.object({ stopped: z.boolean() }))
    .mutation(({ ctx, input }) => ctx.manager.stop(input.run_id, input.attempt)),

  rescore: authedProcedure
    .input(RescoreRequest)
    .output(RescoreResponse)
    // A mutation for the same reason as validate: files and trajectories travel in the body. A caller that
    // goes away aborts the re-scores still running.
    .mutation(({ ctx, input, signal }) => ctx.manager.rescore(input, signal)),

  status: authedProcedure.output(RunnerStatus).query(({ ctx }) => {
    const status = ctx.manager.status();
    return {
      ...status,
      device: engineDevice(status.engine.health),
      models: ctx.pool.models,
      capacity: ctx.pool.capacity,
      cpu_share: ctx.pool.cpu_share,
      // From the same health the supervisor logs them from (once): the Runners page shows them while they hold.
      notices: engineNotices(status.engine.health),
    };
  }),

  events: authedProcedure.input(EventsInput).subscription(async function* ({ ctx, input, signal }) {
    if (!ctx.manager.exists(input.run_id)) {
      throw new TRPCError({ code: "NOT_FOUND", message: `no run ${input.run_id} on this runner` });
    }
    const resumed = Number(input.lastEventId);
    const after = Number.isInteger(resumed) && resumed > input.after_seq ? resumed : input.after_seq;
    for await (const event of ctx.manager.events.subscribe(input.run_id, after, signal)) {
      yield tracked(String(event.seq), event);
    }
  }),

  eventBatches: authedProcedure.input(EventsInput).subscription(async function* ({ ctx, input, signal }) {
    if (!ctx.manager.exists(input.run_id)) {
      throw new TRPCError({ code: "NOT_FOUND", message: `no run ${input.run_id} on this runner` });
    }
    const resumed = Number(input.lastEventId);
    const after = Number.isInteger(resumed) && resumed > input.after_seq ? resumed : input.after_seq;
    for await (const batch of ctx.manager.events.subscribeBatches(input.run_id, after, signal)) {
      yield tracked(String(batch.at(-1)!.seq), batch);
    }
  }),
});

export type RunnerRouter = typeof runnerRouter;

/** The engine's device from its health body ("cpu", "cuda:0"), with the GPU's name when it gives one. */
function engineDevice(health: unknown): string | null {
  if (!health || typeof health !== "object") return null;
  const h = health as { device?: unknown; gpu_name?: unknown };
  if (typeof h.device !== "string") return null;
  return typeof h.gpu_name === "string" ? `${h.device}: ${h.gpu_name}` : h.device;
}
