/**
 * POST /tinker/<op>: the engine's Tinker primitives (contracts/tinker-engine.ts), passed through for the web
 * server's Tinker door (features/tinker). The runner's part is what only it knows:
 *
 *   - the body is checked against the contract before the engine sees it (400 naming the field);
 *   - a training op's run is recorded as the workspace's on this runner (run-owner.ts), so a run id another
 *     workspace trains here is refused (404, as for a checkpoint), and a run of this runner's own loop is
 *     refused (its adapter is the loop's);
 *   - sample's model: a checkpoint only of the workspace's own runs (modelRefProblem), and the engine is told
 *     the workspace too (it checks again);
 *   - after a save, the checkpoint is published to the shared folder when there is one (as a step's is).
 *
 * The engine's answer (status and JSON body) is passed on as is: its errors already name the field.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { z } from "zod";
import {
  formatZodIssues,
  isIdentifier,
  RUNNER_WORKSPACE_HEADER,
  TinkerForwardBackwardRequest,
  TinkerLoadRequest,
  TinkerOptimStepRequest,
  TinkerSampleRequest,
  TinkerSaveRequest,
} from "../../../contracts";
import { modelRefProblem, recordRunWorkspace, RunOwnerConflict, runWorkspace } from "../loop/run-owner";
import { assertSafeRunId } from "../events/event-log";

export const TINKER_ROUTE = /^\/tinker\/(forward_backward|optim_step|save|load|sample)$/;

/** A forward_backward body of long sequences with float inputs is the biggest (the web door caps its own at 32 MiB). */
export const MAX_TINKER_BYTES = 48 * 1024 * 1024;

const SCHEMAS: Record<string, z.ZodType<unknown>> = {
  forward_backward: TinkerForwardBackwardRequest,
  optim_step: TinkerOptimStepRequest,
  save: TinkerSaveRequest,
  load: TinkerLoadRequest,
  sample: TinkerSampleRequest,
};

export interface TinkerPassDeps {
  runsDir: string;
  engineFetch: (pathname: string, init: RequestInit, workspace: string | null) => Promise<Response>;
  /** True when the run id is one of this runner's own loop's runs (never trained from outside). */
  isOwnRun: (runId: string) => boolean;
  publishCheckpoint?: (runId: string, step: number) => Promise<void>;
}

type Send = (status: number, message: string, param?: string | null) => void;

/** The refusal before the engine is asked, or null. Exported for tests. */
export function tinkerRefusal(op: string, body: unknown, workspace: string | null, deps: Pick<TinkerPassDeps, "runsDir" | "isOwnRun">): { status: number; message: string; param: string | null } | null {
  if (!workspace) return { status: 400, message: `${RUNNER_WORKSPACE_HEADER}: required (the workspace the call acts for)`, param: null };
  const schema = SCHEMAS[op];
  if (!schema) return { status: 404, message: `no such Tinker primitive: ${op}`, param: null };
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { status: 400, message: formatZodIssues(parsed.error).slice(0, 3).join("; "), param: issue ? issue.path.join(".") || null : null };
  }
  const value = parsed.data as { run_id?: string; source_run_id?: string; model?: string };
  if (op === "sample") {
    const problem = modelRefProblem(deps.runsDir, "model", value.model ?? "", workspace);
    return problem ? { status: 404, message: problem, param: "model" } : null;
  }
  for (const field of ["run_id", "source_run_id"] as const) {
    const id = value[field];
    if (id === undefined) continue;
    try {
      assertSafeRunId(id);
    } catch (e) {
      return { status: 400, message: `${field}: ${(e as Error).message}`, param: field };
    }
    if (deps.isOwnRun(id)) return { status: 409, message: `${field}: run ${id} is a run of this runner's own loop, not a Tinker model`, param: field };
  }
  if (value.source_run_id !== undefined && runWorkspace(deps.runsDir, value.source_run_id) !== workspace) {
    return { status: 404, message: `source_run_id: no run '${value.source_run_id}' in this workspace`, param: "source_run_id" };
  }
  try {
    recordRunWorkspace(deps.runsDir, value.run_id!, workspace);
  } catch (e) {
    // Another workspace's run id: answered as if it did not exist (no hint that it does).
    if (e instanceof RunOwnerConflict) return { status: 404, message: `run_id: run ${value.run_id} is not a Tinker model of this workspace`, param: "run_id" };
    throw e;
  }
  return null;
}

export async function tinkerPass(req: IncomingMessage, res: ServerResponse, op: string, parsed: unknown, deps: TinkerPassDeps, send: Send): Promise<void> {
  const header = req.headers[RUNNER_WORKSPACE_HEADER];
  const workspace = typeof header === "string" && isIdentifier("workspace_id", header) ? header : null;
  const refused = tinkerRefusal(op, parsed, workspace, deps);
  if (refused) return send(refused.status, refused.message, refused.param);
  const upstream = new AbortController();
  res.on("close", () => upstream.abort(new Error("client went away")));
  let engineRes: Response;
  try {
    engineRes = await deps.engineFetch(`/tinker/${op}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(parsed), signal: upstream.signal }, workspace);
  } catch (e) {
    if (upstream.signal.aborted) return;
    return send(503, `engine unreachable: ${(e as Error).message}`);
  }
  const text = await engineRes.text();
  if (op === "save" && engineRes.ok && deps.publishCheckpoint) {
    const saved = JSON.parse(text) as { step: number; checkpoint: unknown };
    if (saved.checkpoint) await deps.publishCheckpoint((parsed as { run_id: string }).run_id, saved.step);
  }
  res.writeHead(engineRes.status, { "content-type": engineRes.headers.get("content-type") ?? "application/json", "content-length": Buffer.byteLength(text) }).end(text);
}
