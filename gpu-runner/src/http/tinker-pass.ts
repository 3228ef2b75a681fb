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
  TinkerRecordedSampleRequest,
  TinkerSampleResponse,
  TinkerSaveRequest,
} from "../../../contracts";
import { appendTokenLine } from "../events/token-log";
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
  sample: TinkerRecordedSampleRequest,
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
  const value = parsed.data as { run_id?: string; source_run_id?: string; model?: string; record?: { run_id: string } };
  if (op === "sample") {
    const problem = modelRefProblem(deps.runsDir, "model", value.model ?? "", workspace);
    if (problem) return { status: 404, message: problem, param: "model" };
    // The run whose token log records the samples: the workspace's, as a training op's run.
    if (!value.record) return null;
    return runRefusal(value.record.run_id, "record.run_id", workspace, deps);
  }
  if (value.source_run_id !== undefined) {
    const bad = safeRunIdProblem(value.source_run_id, "source_run_id", deps);
    if (bad) return bad;
    if (runWorkspace(deps.runsDir, value.source_run_id) !== workspace) return { status: 404, message: `source_run_id: no run '${value.source_run_id}' in this workspace`, param: "source_run_id" };
  }
  return runRefusal(value.run_id!, "run_id", workspace, deps);
}

type Refusal = { status: number; message: string; param: string | null };

function safeRunIdProblem(id: string, field: string, deps: Pick<TinkerPassDeps, "isOwnRun">): Refusal | null {
  try {
    assertSafeRunId(id);
  } catch (e) {
    return { status: 400, message: `${field}: ${(e as Error).message}`, param: field };
  }
  if (deps.isOwnRun(id)) return { status: 409, message: `${field}: run ${id} is a run of this runner's own loop, not a Tinker model`, param: field };
  return null;
}

/** A Tinker model's run id: safe, not the loop's, and recorded as the workspace's here (another's is "not found"). */
function runRefusal(id: string, field: string, workspace: string, deps: Pick<TinkerPassDeps, "runsDir" | "isOwnRun">): Refusal | null {
  const bad = safeRunIdProblem(id, field, deps);
  if (bad) return bad;
  try {
    recordRunWorkspace(deps.runsDir, id, workspace);
  } catch (e) {
    // Another workspace's run id: answered as if it did not exist (no hint that it does).
    if (e instanceof RunOwnerConflict) return { status: 404, message: `${field}: run ${id} is not a Tinker model of this workspace`, param: field };
    throw e;
  }
  return null;
}

/** A recorded sample's sequences in the run's token log: the prompt (mask 0) then the sampled tokens (mask 1). */
function recordSampleTokens(runsDir: string, request: { prompt_token_ids: number[]; record: { run_id: string; trajectory_ids: string[] } }, answer: TinkerSampleResponse): void {
  const prompt = request.prompt_token_ids;
  answer.sequences.forEach((seq, i) => {
    const id = request.record.trajectory_ids[i];
    if (!id || seq.tokens.length === 0) return;
    const sequence = { tokens: [...prompt, ...seq.tokens], mask: [...prompt.map(() => 0 as const), ...seq.tokens.map(() => 1 as const)], logprobs: [...prompt.map(() => 0), ...seq.logprobs] };
    appendTokenLine(runsDir, request.record.run_id, { trajectory_id: id, sequences: [sequence] }, (m) => process.stderr.write(`tinker sample: ${m}\n`));
  });
}

export async function tinkerPass(req: IncomingMessage, res: ServerResponse, op: string, parsed: unknown, deps: TinkerPassDeps, send: Send): Promise<void> {
  const header = req.headers[RUNNER_WORKSPACE_HEADER];
  const workspace = typeof header === "string" && isIdentifier("workspace_id", header) ? header : null;
  const refused = tinkerRefusal(op, parsed, workspace, deps);
  if (refused) return send(refused.status, refused.message, refused.param);
  const upstream = new AbortController();
  res.on("close", () => upstream.abort(new Error("client went away")));
  // What the engine takes: the contract's fields, `record` (the runner's own business) left out.
  const { record, ...forEngine } = parsed as { record?: { run_id: string; trajectory_ids: string[] } };
  let engineRes: Response;
  try {
    engineRes = await deps.engineFetch(`/tinker/${op}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(forEngine), signal: upstream.signal }, workspace);
  } catch (e) {
    if (upstream.signal.aborted) return;
    return send(503, `engine unreachable: ${(e as Error).message}`);
  }
  const text = await engineRes.text();
  if (op === "sample" && engineRes.ok && record) {
    const answer = TinkerSampleResponse.safeParse(JSON.parse(text));
    if (answer.success) recordSampleTokens(deps.runsDir, { prompt_token_ids: (forEngine as { prompt_token_ids: number[] }).prompt_token_ids, record }, answer.data);
  }
  if (op === "save" && engineRes.ok && deps.publishCheckpoint) {
    const saved = JSON.parse(text) as { step: number; checkpoint: unknown };
    if (saved.checkpoint) await deps.publishCheckpoint((parsed as { run_id: string }).run_id, saved.step);
  }
  res.writeHead(engineRes.status, { "content-type": engineRes.headers.get("content-type") ?? "application/json", "content-length": Buffer.byteLength(text) }).end(text);
}
