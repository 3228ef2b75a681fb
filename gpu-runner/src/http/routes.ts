/**
 * The runner's plain-HTTP routes, beside its tRPC API (same port, same bearer RUNNER_TOKEN):
 *
 *   GET  /checkpoints/<run>/<step>/adapter.tar.gz   a checkpoint as a PEFT folder archive (checkpoint-archive.ts)
 *   GET  /runs/<run>/tokens.jsonl                   each rollout's exact token sequences (events/token-log.ts)
 *   GET  /runs/<run>/rollouts/<id>/tokens           one rollout's tokens with text, sampling and trainer
 *                                                   logprobs, for the token view (rollout-tokens.ts)
 *   GET  /checkpoints/<run>/<step>/state.tar.gz   \
 *   PUT  /runs/<run>/checkpoints/<step>/state.tar.gz  > moving a run between runners (run-import.ts)
 *   GET|PUT /runs/<run>/logs/<name>                 |
 *   PUT  /runs/<run>/events.jsonl                   /
 *   DELETE /runs/<run>/checkpoints/<step>           one checkpoint's folder, never the run's newest
 *                                                   (checkpoint-delete.ts)
 *   POST /external-train                            one step over rollouts sampled elsewhere (an ART training
 *                                                   job): ExternalTrainRequest in, ExternalTrainLine NDJSON out
 *   GET  /tinker/tokenizer/<file>                   the base model's tokenizer files (the engine's), for the Tinker door
 *   POST /tinker/<op>                               the engine's Tinker primitives for the web server's Tinker door
 *                                                   (forward_backward, optim_step, save, load, sample: tinker-pass.ts)
 *   POST /v1/chat/completions                       the engine's OpenAI-compatible chat, passed through
 *                                                   (plain JSON or server-sent events, status and body as is)
 *
 * Not tRPC because both are byte streams (a tar.gz, SSE chunks in OpenAI's shape) that other clients
 * consume as they are. The web server is the only caller: it checks the user's workspace and rewrites the
 * model name first (features/checkpoints/server/checkpoints.ts); users never reach the runner or the engine.
 *
 * Bodies: the GETs take none; the chat body is held in memory, so its declared length is checked before
 * it is read and its bytes are counted as it streams (at most MAX_CHAT_BODY_BYTES, and never more than
 * RUNNER_MAX_REQUEST_BYTES); uploads stream to disk under MAX_IMPORT_BYTES (body-cap.ts says why).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import fs from "node:fs";
import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { ExternalTrainRequest, formatZodIssues, isIdentifier, jsonTooDeepAt, nestedTooDeepMessage, RUNNER_WORKSPACE_HEADER, type ExternalTrainLine } from "../../../contracts";
import { modelRefProblem } from "../loop/run-owner";
import { assertSafeRunId } from "../events/event-log";
import { tokenLogFile } from "../events/token-log";
import { EngineError } from "../engine/client";
import { bearerToken, tokenMatches } from "../trpc";
import { declaredBytes, declaresBody, noBodyMessage, sendRefusal, tooLargeMessage } from "./body-cap";
import { CheckpointNotFound, peftArchive, resolveCheckpoint } from "./checkpoint-archive";
import { MAX_TINKER_BYTES, TINKER_ROUTE, tinkerPass, type TinkerPassDeps } from "./tinker-pass";
import { CheckpointDeleteRefused, DELETE_CHECKPOINT_ROUTE, deleteCheckpointFiles } from "./checkpoint-delete";
import { RolloutTokensNotFound, rolloutTokens } from "./rollout-tokens";
import {
  ImportRefused,
  MAX_IMPORT_BYTES,
  importCheckpoint,
  importEvents,
  importSideLog,
  PUT_EVENTS_ROUTE,
  PUT_STATE_ROUTE,
  SIDE_LOG_ROUTE,
  sideLogStream,
  STATE_ARCHIVE_ROUTE,
  stateArchive,
  type RunImportDeps,
} from "./run-import";

export interface RunnerHttpDeps {
  /** ROLLBOOK_RUNS_DIR: where checkpoints live (runs/<run>/checkpoints/<step:04d>). */
  runsDir: string;
  /** RUNNER_TOKEN: the web server's bearer. */
  token: string;
  /**
   * A request to the engine with its credentials, acting for `workspace` (the engine serves a checkpoint only
   * to its run's workspace); the raw response (any status) is passed through.
   */
  engineFetch: (pathname: string, init: RequestInit, workspace: string | null) => Promise<Response>;
  /** The engine's POST /detokenize (throws when the engine is unreachable or still loading). */
  detokenize: (tokenIds: number[]) => Promise<string[]>;
  /** What moving a run here needs (the shared checkpoint folder, whether a run is running). */
  imports: Omit<RunImportDeps, "runsDir">;
  /** The run manager's externalTrain (absent in tests that serve only files). */
  externalTrain?: (req: ExternalTrainRequest, signal: AbortSignal) => AsyncGenerator<ExternalTrainLine>;
  /** What the Tinker pass-through needs beyond the engine (absent in tests that serve only files). */
  tinker?: Omit<TinkerPassDeps, "runsDir" | "engineFetch">;
  /** RUNNER_MAX_REQUEST_BYTES: no body held in memory is bigger (default: MAX_CHAT_BODY_BYTES alone). */
  maxRequestBytes?: number;
}

/** A chat request body bigger than this is refused (413): a prompt this size is far past any context. */
export const MAX_CHAT_BODY_BYTES = 8 * 1024 * 1024;
/**
 * An external step's body (a step's conversations and sampled ids; the web server's ART door takes at most
 * 32 MiB with top logprobs, which it drops) bigger than this is refused (413).
 */
export const MAX_EXTERNAL_TRAIN_BYTES = 48 * 1024 * 1024;
const EXTERNAL_TRAIN_ROUTE = "/external-train";

const ARCHIVE_ROUTE = /^\/checkpoints\/([^/]+)\/([^/]+)\/adapter\.tar\.gz$/;
const CHAT_ROUTE = "/v1/chat/completions";
const TOKENS_ROUTE = /^\/runs\/([^/]+)\/tokens\.jsonl$/;
const TOKENIZER_FILE_ROUTE = /^\/tinker\/tokenizer\/([^/]+)$/;
/** A tokenizer file's name: a plain file name (the engine looks it up in its listing anyway). */
const TOKENIZER_FILE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;
const ROLLOUT_TOKENS_ROUTE = /^\/runs\/([^/]+)\/rollouts\/([^/]+)\/tokens$/;

/** OpenAI's error shape, which the web server passes on to OpenAI clients unchanged. */
function sendError(res: ServerResponse, status: number, message: string, param: string | null = null): void {
  const type = status === 401 ? "authentication_error" : status === 404 ? "not_found_error" : status >= 500 ? "server_error" : "invalid_request_error";
  const body = JSON.stringify({ error: { message, type, param, code: status } });
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
}

/** OpenAI's error shape for a refused body (413), the connection closed so the rest is never read. */
function refuseBody(res: ServerResponse, message: string): void {
  sendRefusal(res, { error: { message, type: "invalid_request_error", param: null, code: 413 } });
}

/** Why this request's body is refused before any of it is read, or null. */
function bodyRefusal(req: IncomingMessage, deps: RunnerHttpDeps): string | null {
  if (req.method === "GET" || req.method === "HEAD") return declaresBody(req) ? noBodyMessage(req) : null;
  if (req.method === "PUT") return declaredBytes(req) > MAX_IMPORT_BYTES ? tooLargeMessage(MAX_IMPORT_BYTES, "MAX_IMPORT_BYTES") : null;
  const pathname = (req.url ?? "").split("?")[0] ?? "";
  const cap = pathname === EXTERNAL_TRAIN_ROUTE ? externalCap(deps) : TINKER_ROUTE.test(pathname) ? tinkerCap(deps) : chatCap(deps);
  return declaredBytes(req) > cap.limit ? tooLargeMessage(cap.limit, cap.setting) : null;
}

function externalCap(deps: RunnerHttpDeps): { limit: number; setting: string } {
  return deps.maxRequestBytes !== undefined && deps.maxRequestBytes < MAX_EXTERNAL_TRAIN_BYTES
    ? { limit: deps.maxRequestBytes, setting: "RUNNER_MAX_REQUEST_BYTES" }
    : { limit: MAX_EXTERNAL_TRAIN_BYTES, setting: "an external training step's cap" };
}

function tinkerCap(deps: RunnerHttpDeps): { limit: number; setting: string } {
  return deps.maxRequestBytes !== undefined && deps.maxRequestBytes < MAX_TINKER_BYTES
    ? { limit: deps.maxRequestBytes, setting: "RUNNER_MAX_REQUEST_BYTES" }
    : { limit: MAX_TINKER_BYTES, setting: "the Tinker pass-through's cap" };
}

function chatCap(deps: RunnerHttpDeps): { limit: number; setting: string } {
  return deps.maxRequestBytes !== undefined && deps.maxRequestBytes < MAX_CHAT_BODY_BYTES
    ? { limit: deps.maxRequestBytes, setting: "RUNNER_MAX_REQUEST_BYTES" }
    : { limit: MAX_CHAT_BODY_BYTES, setting: "the chat pass-through's cap" };
}

/** True when the path is one of these routes (the caller hands everything else to tRPC). */
export function isRunnerHttpRoute(url: string | undefined): boolean {
  const pathname = (url ?? "").split("?")[0] ?? "";
  if (STATE_ARCHIVE_ROUTE.test(pathname) || PUT_STATE_ROUTE.test(pathname) || PUT_EVENTS_ROUTE.test(pathname) || SIDE_LOG_ROUTE.test(pathname)) return true;
  return ARCHIVE_ROUTE.test(pathname) || DELETE_CHECKPOINT_ROUTE.test(pathname) || TOKENS_ROUTE.test(pathname) || ROLLOUT_TOKENS_ROUTE.test(pathname) || pathname === CHAT_ROUTE || pathname === EXTERNAL_TRAIN_ROUTE || TINKER_ROUTE.test(pathname) || TOKENIZER_FILE_ROUTE.test(pathname);
}

export async function handleRunnerHttp(req: IncomingMessage, res: ServerResponse, deps: RunnerHttpDeps): Promise<void> {
  try {
    if (!tokenMatches(bearerToken(req), deps.token)) return sendError(res, 401, "missing or wrong runner token");
    const refused = bodyRefusal(req, deps);
    if (refused) return refuseBody(res, refused);
    const pathname = (req.url ?? "").split("?")[0] ?? "";
    const archive = ARCHIVE_ROUTE.exec(pathname);
    if (archive) {
      if (req.method !== "GET" && req.method !== "HEAD") return sendError(res, 405, `${req.method} is not allowed here: GET`);
      return await sendArchive(req, res, deps, decodeURIComponent(archive[1]!), decodeURIComponent(archive[2]!));
    }
    const del = DELETE_CHECKPOINT_ROUTE.exec(pathname);
    if (del) {
      if (req.method !== "DELETE") return sendError(res, 405, `${req.method} is not allowed here: DELETE`);
      try {
        return sendJson(res, 200, await deleteCheckpointFiles(deps.runsDir, deps.imports.sharedDir, decodeURIComponent(del[1]!), decodeURIComponent(del[2]!)));
      } catch (e) {
        if (e instanceof CheckpointDeleteRefused) return sendError(res, e.status, e.message);
        throw e;
      }
    }
    const moved = await handleRunMove(req, res, deps, pathname);
    if (moved) return;
    const tokens = TOKENS_ROUTE.exec(pathname);
    if (tokens) {
      if (req.method !== "GET") return sendError(res, 405, `${req.method} is not allowed here: GET`);
      return sendTokenLog(res, deps, decodeURIComponent(tokens[1]!));
    }
    const tokenizerFile = TOKENIZER_FILE_ROUTE.exec(pathname);
    if (tokenizerFile) {
      if (req.method !== "GET") return sendError(res, 405, `${req.method} is not allowed here: GET`);
      return await sendTokenizerFile(res, deps, decodeURIComponent(tokenizerFile[1]!));
    }
    const rollout = ROLLOUT_TOKENS_ROUTE.exec(pathname);
    if (rollout) {
      if (req.method !== "GET") return sendError(res, 405, `${req.method} is not allowed here: GET`);
      return await sendRolloutTokens(res, deps, decodeURIComponent(rollout[1]!), decodeURIComponent(rollout[2]!));
    }
    if (req.method !== "POST") return sendError(res, 405, `${req.method} is not allowed here: POST`);
    if (pathname === EXTERNAL_TRAIN_ROUTE) return await externalTrainStep(req, res, deps);
    const tinker = TINKER_ROUTE.exec(pathname);
    if (tinker) return await tinkerStep(req, res, deps, tinker[1]!);
    return await proxyChat(req, res, deps);
  } catch (e) {
    if (!res.headersSent) return sendError(res, 500, `runner: ${(e as Error).message}`);
    res.destroy(e as Error);
  }
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
}

/** The run-move routes (run-import.ts); false when the path is none of them. */
async function handleRunMove(req: IncomingMessage, res: ServerResponse, deps: RunnerHttpDeps, pathname: string): Promise<boolean> {
  const imports: RunImportDeps = { runsDir: deps.runsDir, ...deps.imports };
  const state = STATE_ARCHIVE_ROUTE.exec(pathname);
  const putState = PUT_STATE_ROUTE.exec(pathname);
  const putEvents = PUT_EVENTS_ROUTE.exec(pathname);
  const sideLog = SIDE_LOG_ROUTE.exec(pathname);
  if (!state && !putState && !putEvents && !sideLog) return false;
  const wanted = state ? ["GET"] : sideLog ? ["GET", "PUT"] : ["PUT"];
  if (!wanted.includes(req.method ?? "")) {
    sendError(res, 405, `${req.method} is not allowed here: ${wanted.join(" or ")}`);
    return true;
  }
  try {
    if (state) {
      const runId = decodeURIComponent(state[1]!);
      const step = decodeURIComponent(state[2]!);
      const archive = await stateArchive(deps.runsDir, runId, step);
      res.writeHead(200, { "content-type": "application/gzip" });
      archive.on("error", (err: Error) => res.destroy(err)); // the importer sees a broken archive, never a good one
      archive.pipe(res);
    } else if (putState) {
      sendJson(res, 200, await importCheckpoint(req, imports, decodeURIComponent(putState[1]!), decodeURIComponent(putState[2]!)));
    } else if (sideLog && req.method === "GET") {
      const stream = sideLogStream(deps.runsDir, decodeURIComponent(sideLog[1]!), decodeURIComponent(sideLog[2]!));
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      stream.on("error", (err) => res.destroy(err));
      stream.pipe(res);
    } else if (sideLog) {
      sendJson(res, 200, await importSideLog(req, imports, decodeURIComponent(sideLog[1]!), decodeURIComponent(sideLog[2]!)));
    } else if (putEvents) {
      const query = new URLSearchParams((req.url ?? "").split("?")[1] ?? "");
      sendJson(res, 200, await importEvents(req, imports, decodeURIComponent(putEvents[1]!), query));
    }
  } catch (e) {
    if (e instanceof CheckpointNotFound) sendError(res, 404, e.message);
    else if (e instanceof ImportRefused) {
      sendError(res, e.status, e.message);
      req.resume(); // drain what the client still sends
    } else throw e;
  }
  return true;
}

async function sendArchive(req: IncomingMessage, res: ServerResponse, deps: RunnerHttpDeps, runId: string, stepText: string): Promise<void> {
  let ckpt: Awaited<ReturnType<typeof resolveCheckpoint>>;
  try {
    ckpt = await resolveCheckpoint(deps.runsDir, runId, stepText);
  } catch (e) {
    if (e instanceof CheckpointNotFound) return sendError(res, 404, e.message);
    throw e;
  }
  res.writeHead(200, {
    "content-type": "application/gzip",
    "content-disposition": `attachment; filename="${runId}-step${ckpt.step}-adapter.tar.gz"`,
    // Compressed size is not known up front; this is what the files weigh (a progress hint for callers).
    "x-rollbook-adapter-bytes": String(ckpt.bytes),
  });
  if (req.method === "HEAD") return void res.end();
  const tar = peftArchive(ckpt.dir, runId, ckpt.step);
  tar.on("error", (err: Error) => res.destroy(err)); // mid-stream: the client sees a truncated archive, not a good one
  res.on("close", () => (tar as unknown as { destroy?: () => void }).destroy?.());
  tar.pipe(res);
}

function sendTokenLog(res: ServerResponse, deps: RunnerHttpDeps, runId: string): void {
  let file: string;
  try {
    file = tokenLogFile(deps.runsDir, runId);
  } catch (e) {
    return sendError(res, 404, `run ${runId}: ${(e as Error).message}`);
  }
  if (!fs.existsSync(file)) return sendError(res, 404, `run ${runId} has no recorded token ids on this runner`);
  res.writeHead(200, { "content-type": "application/x-ndjson" });
  const stream = fs.createReadStream(file);
  stream.on("error", (err) => res.destroy(err));
  stream.pipe(res);
}

async function sendRolloutTokens(res: ServerResponse, deps: RunnerHttpDeps, runId: string, trajectoryId: string): Promise<void> {
  try {
    assertSafeRunId(runId);
  } catch (e) {
    return sendError(res, 404, `run ${runId}: ${(e as Error).message}`);
  }
  let body: string;
  try {
    body = JSON.stringify(await rolloutTokens(deps.runsDir, runId, trajectoryId, deps.detokenize));
  } catch (e) {
    if (e instanceof RolloutTokensNotFound) return sendError(res, 404, e.message);
    // Unreachable, restarting or still loading: the texts cannot be had now, the tokens are still there.
    if (e instanceof EngineError) return sendError(res, 503, `the engine could not decode the tokens: ${e.message}`);
    throw e;
  }
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
}

/**
 * The body, or null past `limit`: reading stops there and the rest is left unread (breaking out of a
 * for-await would destroy the request, and with it the socket the 413 is to be written on).
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (value: Buffer | null) => {
      req.off("data", onData).off("end", onEnd).off("error", reject);
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      req.pause();
      done(null);
    };
    const onEnd = () => done(Buffer.concat(chunks));
    req.on("data", onData).on("end", onEnd).on("error", reject);
  });
}

/**
 * POST /external-train: the body checked (ExternalTrainRequest), then the step's lines as NDJSON as they come.
 * Plain HTTP rather than a tRPC subscription: those send their input in the URL, and a step's conversations
 * are megabytes. The caller going away does not stop a step that is training (it finishes and saves, and
 * asking again answers its checkpoint: external-train.ts).
 */
async function externalTrainStep(req: IncomingMessage, res: ServerResponse, deps: RunnerHttpDeps): Promise<void> {
  if (!deps.externalTrain) return sendError(res, 404, "this runner does not train external steps");
  const read = await readJsonBody(req, res, externalCap(deps));
  if (!read) return;
  const request = ExternalTrainRequest.safeParse(read.parsed);
  if (!request.success) return sendError(res, 400, formatZodIssues(request.error).slice(0, 3).join("; "));
  const gone = new AbortController();
  res.on("close", () => gone.abort(new Error("client went away")));
  res.writeHead(200, { "content-type": "application/x-ndjson", "cache-control": "no-cache" });
  try {
    for await (const line of deps.externalTrain(request.data, gone.signal)) {
      if (!res.writableEnded && !res.destroyed) res.write(JSON.stringify(line) + "\n");
    }
  } catch (e) {
    if (!res.destroyed) res.write(JSON.stringify({ type: "error", message: `runner: ${(e as Error).message}` } satisfies ExternalTrainLine) + "\n");
  }
  res.end();
}

/**
 * A JSON body read under `cap`: refused (413) past it, 400 when nested deeper than MAX_JSON_DEPTH (the
 * engine's parser recurses; the web server checked already, this is the runner's own door) or not JSON.
 * null when it answered the refusal itself.
 */
async function readJsonBody(req: IncomingMessage, res: ServerResponse, cap: { limit: number; setting: string }): Promise<{ body: Buffer; parsed: unknown } | null> {
  const body = await readBody(req, cap.limit);
  if (!body) {
    refuseBody(res, tooLargeMessage(cap.limit, cap.setting));
    return null;
  }
  const text = body.toString("utf8");
  if (jsonTooDeepAt(text) !== null) {
    sendError(res, 400, `request body is ${nestedTooDeepMessage()}`);
    return null;
  }
  try {
    return { body, parsed: JSON.parse(text) };
  } catch {
    sendError(res, 400, "request body is not JSON");
    return null;
  }
}

async function sendTokenizerFile(res: ServerResponse, deps: RunnerHttpDeps, name: string): Promise<void> {
  if (!TOKENIZER_FILE_NAME.test(name)) return sendError(res, 404, `the tokenizer has no file ${JSON.stringify(name.slice(0, 100))}`);
  let engineRes: Response;
  try {
    engineRes = await deps.engineFetch(`/tokenizer/files/${encodeURIComponent(name)}`, { method: "GET" }, null);
  } catch (e) {
    return sendError(res, 503, `engine unreachable: ${(e as Error).message}`);
  }
  if (!engineRes.ok) return sendError(res, engineRes.status === 404 ? 404 : 502, `the engine answered ${engineRes.status} for tokenizer file ${name}`);
  const body = Buffer.from(await engineRes.arrayBuffer());
  res.writeHead(200, { "content-type": "application/octet-stream", "content-length": body.byteLength }).end(body);
}

async function tinkerStep(req: IncomingMessage, res: ServerResponse, deps: RunnerHttpDeps, op: string): Promise<void> {
  if (!deps.tinker) return sendError(res, 404, "this runner does not serve the Tinker primitives");
  const read = await readJsonBody(req, res, tinkerCap(deps));
  if (!read) return;
  await tinkerPass(req, res, op, read.parsed, { runsDir: deps.runsDir, engineFetch: deps.engineFetch, ...deps.tinker }, (status, message, param) => sendError(res, status, message, param ?? null));
}

async function proxyChat(req: IncomingMessage, res: ServerResponse, deps: RunnerHttpDeps): Promise<void> {
  const read = await readJsonBody(req, res, chatCap(deps));
  if (!read) return;
  const { body, parsed } = read;
  const model = (parsed as { model?: unknown } | null)?.model;
  if (typeof model !== "string" || !model) return sendError(res, 400, "model: required, the base model or `<run>@<step>`", "model");
  // The workspace the web server says it acts in; a checkpoint only to the workspace of the run that saved it
  // (run-owner.ts), and the engine checks the same again (it is told the workspace, never the caller's say).
  const header = req.headers[RUNNER_WORKSPACE_HEADER];
  const workspace = typeof header === "string" && isIdentifier("workspace_id", header) ? header : null;
  const problem = modelRefProblem(deps.runsDir, "model", model, workspace ?? "");
  if (problem) return sendError(res, 404, problem, "model");

  // Closing the client connection aborts the engine call, which drops the generation (request_io.py).
  const upstream = new AbortController();
  res.on("close", () => upstream.abort(new Error("client went away")));
  let engineRes: Response;
  try {
    engineRes = await deps.engineFetch(
      CHAT_ROUTE,
      { method: "POST", headers: { "content-type": "application/json" }, body: new Uint8Array(body), signal: upstream.signal },
      workspace,
    );
  } catch (e) {
    if (upstream.signal.aborted) return;
    return sendError(res, 503, `engine unreachable: ${(e as Error).message}`);
  }
  const headers: Record<string, string> = { "content-type": engineRes.headers.get("content-type") ?? "application/json" };
  const cacheControl = engineRes.headers.get("cache-control");
  if (cacheControl) headers["cache-control"] = cacheControl;
  res.writeHead(engineRes.status, headers);
  if (res.req.method === "HEAD" || !engineRes.body) return void res.end();
  // Each SSE chunk is flushed as it arrives (no buffering), so tokens stream through.
  const stream = Readable.fromWeb(engineRes.body as WebReadableStream<Uint8Array>);
  stream.on("error", (err) => res.destroy(err));
  stream.pipe(res);
}
