/**
 * Moving a run to this runner (the web server resumes a run whose runner was lost or is being left):
 *
 *   GET /checkpoints/<run>/<step>/state.tar.gz   (the OLD runner) the whole checkpoint folder: adapter,
 *                                                optimizer.pt, trainer_state.json — what resuming needs
 *   PUT /runs/<run>/checkpoints/<step>/state.tar.gz   (the NEW runner) that archive, unpacked into its runs folder
 *   GET /runs/<run>/logs/<tokens.jsonl|train-logprobs.jsonl>   (the OLD runner) a side log of the run
 *   PUT /runs/<run>/logs/<tokens.jsonl|train-logprobs.jsonl>   (the NEW runner) the same, replacing its copy
 *   PUT /runs/<run>/events.jsonl?checkpoint_step=K    (the NEW runner) the run's event log as the web server
 *                                                stored it (seq 1..lastSeq), which this runner then continues
 *                                                numbering after; refused unless checkpoint K is here (put
 *                                                above, already here, or on the shared checkpoint folder)
 *
 * Both PUTs refuse a run this runner is running, are size-limited while they stream, and write into a temp
 * folder first: a refused or broken upload changes nothing. Archive entries must be exactly the four
 * checkpoint files (regular files, no folders, links or paths): anything else refuses the archive.
 */
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import readline from "node:readline";
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { Transform, type TransformCallback } from "node:stream";
import { pipeline } from "node:stream/promises";
import * as tar from "tar";
import { assertSafeRunId } from "../events/event-log";
import { diskFailureReason, isDiskFull } from "../events/write-failure";
import { CHECKPOINT_FILES, SIDE_LOGS, claimSharedRun, fetchSharedCheckpoints, setAsideNewerCheckpoints } from "../loop/shared-checkpoints";
import { checkpointDir, CheckpointNotFound, resolveCheckpoint } from "./checkpoint-archive";

/** An upload past this many bytes is refused (413) while it streams: a LoRA checkpoint with its optimizer is far smaller. */
export const MAX_IMPORT_BYTES = 4 * 1024 * 1024 * 1024;

export interface RunImportDeps {
  runsDir: string;
  /** ROLLBOOK_SHARED_CHECKPOINT_DIR, when set. */
  sharedDir?: string;
  /** RUNNER_NAME: taking a run on the share makes this runner its only publisher. */
  runnerName: string;
  /** Whether this runner is running (or starting) the run now. */
  isRunning: (runId: string) => boolean;
  /** Drop the run's event log from memory (it is reloaded from the replaced file). */
  forgetLog: (runId: string) => void;
}

export const STATE_ARCHIVE_ROUTE = /^\/checkpoints\/([^/]+)\/([^/]+)\/state\.tar\.gz$/;
export const PUT_STATE_ROUTE = /^\/runs\/([^/]+)\/checkpoints\/([^/]+)\/state\.tar\.gz$/;
export const PUT_EVENTS_ROUTE = /^\/runs\/([^/]+)\/events\.jsonl$/;
export const SIDE_LOG_ROUTE = /^\/runs\/([^/]+)\/logs\/([^/]+)$/;

export class ImportRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "ImportRefused";
  }
}

/** A full disk refuses the upload as such (507, "disk full on runner <name>: …"); anything else is left as it was. */
function diskRefusal(err: unknown, deps: RunImportDeps): unknown {
  if (err instanceof ImportRefused || !isDiskFull(err)) return err;
  return new ImportRefused(507, `${diskFailureReason(deps.runnerName, err)}: the upload was not kept`);
}

function writeAll(fd: number, bytes: Buffer): void {
  for (let written = 0; written < bytes.length; ) {
    const n = fs.writeSync(fd, bytes, written, bytes.length - written);
    if (n <= 0) throw Object.assign(new Error("write(2) wrote nothing"), { code: "EIO" });
    written += n;
  }
}

/** Counts the bytes streaming through and fails the stream past `limit`. */
function byteLimit(limit: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      seen += chunk.length;
      if (seen > limit) return cb(new ImportRefused(413, `upload over ${limit} bytes`));
      cb(null, chunk);
    },
  });
}

function parseStep(text: string): number {
  if (!/^\d{1,10}$/.test(text) || Number(text) > 1_000_000_000) throw new ImportRefused(400, `invalid step ${JSON.stringify(text.slice(0, 40))}: a whole number`);
  return Number(text);
}

function checkRun(runId: string, deps: RunImportDeps): void {
  try {
    assertSafeRunId(runId);
  } catch (e) {
    throw new ImportRefused(400, (e as Error).message);
  }
  if (deps.isRunning(runId)) throw new ImportRefused(409, `run ${runId} is running on this runner: stop it before moving it here`);
}

/** A temp folder inside the run's folder (same filesystem: the final rename is atomic). */
async function stagingDir(runsDir: string, runId: string): Promise<string> {
  const dir = path.join(runsDir, runId, `.import-${randomUUID().slice(0, 8)}`);
  await fsp.mkdir(dir, { recursive: true });
  return dir;
}

/** The old runner's side: the complete checkpoint folder as a tar.gz of its four files. */
export async function stateArchive(runsDir: string, runId: string, stepText: string): Promise<NodeJS.ReadableStream> {
  const { dir } = await resolveCheckpoint(runsDir, runId, stepText);
  for (const name of CHECKPOINT_FILES) {
    const st = await fsp.lstat(path.join(dir, name)).catch(() => null);
    if (!st?.isFile()) throw new CheckpointNotFound(`run ${runId} checkpoint ${stepText} has no ${name} on this runner`);
  }
  return tar.create({ gzip: true, cwd: dir, portable: true }, [...CHECKPOINT_FILES]) as unknown as NodeJS.ReadableStream;
}

/** The new runner's side: unpack a state archive into runs/<run>/checkpoints/<step:04d> (kept if already here). */
export async function importCheckpoint(req: IncomingMessage, deps: RunImportDeps, runId: string, stepText: string): Promise<{ step: number }> {
  checkRun(runId, deps);
  const step = parseStep(stepText);
  const final = checkpointDir(deps.runsDir, runId, step);
  const stage = await stagingDir(deps.runsDir, runId).catch((e: unknown) => {
    throw diskRefusal(e, deps);
  });
  try {
    const refused: string[] = [];
    const allowed = new Set<string>(CHECKPOINT_FILES);
    await pipeline(
      req,
      byteLimit(MAX_IMPORT_BYTES),
      tar.x({
        cwd: stage,
        strict: true,
        // Exactly the four files as regular files: no folder, link, device or path is written.
        filter: (p, entry) => {
          const ok = allowed.has(p) && (entry as tar.ReadEntry).type === "File";
          if (!ok) refused.push(p);
          return ok;
        },
      }),
    ).catch((e: unknown) => {
      if (e instanceof ImportRefused) throw e;
      if (isDiskFull(e)) throw diskRefusal(e, deps);
      throw new ImportRefused(400, `the checkpoint archive could not be read: ${(e as Error).message}`);
    });
    if (refused.length > 0) throw new ImportRefused(400, `the checkpoint archive holds entries other than ${CHECKPOINT_FILES.join(", ")}: ${refused.slice(0, 3).join(", ")}`);
    for (const name of CHECKPOINT_FILES) {
      if (!fs.existsSync(path.join(stage, name))) throw new ImportRefused(400, `the checkpoint archive lacks ${name}`);
    }
    if (fs.existsSync(path.join(final, "trainer_state.json"))) return { step }; // already here (the same step of the same run)
    await fsp.mkdir(path.dirname(final), { recursive: true });
    await fsp.rm(final, { recursive: true, force: true }); // an incomplete folder without its marker
    await fsp.rename(stage, final);
    return { step };
  } finally {
    await fsp.rm(stage, { recursive: true, force: true });
  }
}

function sideLogPath(runsDir: string, runId: string, name: string): string {
  if (!(SIDE_LOGS as readonly string[]).includes(name)) throw new ImportRefused(404, `no log ${JSON.stringify(name.slice(0, 60))}: ${SIDE_LOGS.join(" or ")}`);
  try {
    assertSafeRunId(runId);
  } catch (e) {
    throw new ImportRefused(400, (e as Error).message);
  }
  return path.join(runsDir, runId, name);
}

/** The old runner's side: a side log as a file stream (404 when the run has none here). */
export function sideLogStream(runsDir: string, runId: string, name: string): fs.ReadStream {
  const file = sideLogPath(runsDir, runId, name);
  if (!fs.existsSync(file)) throw new ImportRefused(404, `run ${runId} has no ${name} on this runner`);
  return fs.createReadStream(file);
}

/** The new runner's side: a side log, streamed to a temp file and renamed over this runner's copy. */
export async function importSideLog(req: IncomingMessage, deps: RunImportDeps, runId: string, name: string): Promise<{ bytes: number }> {
  const file = sideLogPath(deps.runsDir, runId, name);
  checkRun(runId, deps);
  const stage = await stagingDir(deps.runsDir, runId).catch((e: unknown) => {
    throw diskRefusal(e, deps);
  });
  try {
    const staged = path.join(stage, name);
    await pipeline(req, byteLimit(MAX_IMPORT_BYTES), fs.createWriteStream(staged)).catch((e: unknown) => {
      throw diskRefusal(e, deps);
    });
    await fsp.rename(staged, file);
    return { bytes: (await fsp.stat(file)).size };
  } finally {
    await fsp.rm(stage, { recursive: true, force: true });
  }
}

/**
 * The run's event log as the web server stored it, replacing whatever this runner had of the run. Every
 * line must be an event of this run, seq 1, 2, 3… without a gap (the log's own invariant). Checkpoint
 * `checkpoint_step` must be here afterwards (uploaded before, or copied from the shared folder); newer
 * checkpoints of an attempt the web server superseded are set aside.
 */
export async function importEvents(
  req: IncomingMessage,
  deps: RunImportDeps,
  runId: string,
  query: URLSearchParams,
): Promise<{ last_seq: number; checkpoint_step: number }> {
  checkRun(runId, deps);
  const step = parseStep(query.get("checkpoint_step") ?? "0");
  const stage = await stagingDir(deps.runsDir, runId).catch((e: unknown) => {
    throw diskRefusal(e, deps);
  });
  try {
    const staged = path.join(stage, "events.jsonl");
    // Written synchronously line by line, so a failed write (a full disk) fails the import there and then,
    // and synced before the rename: the log this runner numbers on from must be on its disk.
    const out = fs.openSync(staged, "w");
    let seq = 0;
    const limited = req.pipe(byteLimit(MAX_IMPORT_BYTES));
    let failed = false;
    const reading = new Promise<void>((resolve, rejectWith) => {
      const reject = (e: unknown) => {
        failed = true;
        rejectWith(e);
      };
      limited.once("error", reject);
      req.once("error", reject);
      const lines = readline.createInterface({ input: limited, crlfDelay: Infinity });
      lines.on("line", (line) => {
        if (failed || line.trim() === "") return;
        let event: { run_id?: unknown; seq?: unknown; type?: unknown };
        try {
          event = JSON.parse(line) as typeof event;
        } catch {
          return reject(new ImportRefused(400, `events.jsonl line ${seq + 1}: not JSON`));
        }
        if (event.run_id !== runId) return reject(new ImportRefused(400, `events.jsonl line ${seq + 1}: run_id ${JSON.stringify(event.run_id)} is not ${runId}`));
        if (event.seq !== seq + 1) return reject(new ImportRefused(400, `events.jsonl line ${seq + 1}: seq ${String(event.seq)}, expected ${seq + 1}`));
        if (typeof event.type !== "string") return reject(new ImportRefused(400, `events.jsonl line ${seq + 1}: no type`));
        try {
          writeAll(out, Buffer.from(line + "\n"));
        } catch (e) {
          return reject(diskRefusal(e, deps));
        }
        seq++;
      });
      lines.once("close", () => resolve());
    });
    try {
      await reading;
      fs.fsyncSync(out);
    } catch (e) {
      throw diskRefusal(e, deps);
    } finally {
      fs.closeSync(out);
    }
    if (seq === 0) throw new ImportRefused(400, "events.jsonl is empty: a run to continue has at least its run.started");

    const here = () => fs.existsSync(path.join(checkpointDir(deps.runsDir, runId, step), "trainer_state.json"));
    if (step > 0 && !here()) {
      if (!deps.sharedDir) {
        throw new ImportRefused(
          409,
          `checkpoint ${step} of run ${runId} is not on this runner and ROLLBOOK_SHARED_CHECKPOINT_DIR is not set here: ` +
            `set it on every runner to one shared folder, or move the run while its old runner still answers`,
        );
      }
      if (!(await fetchSharedCheckpoints(deps.runsDir, deps.sharedDir, runId, step))) {
        throw new ImportRefused(409, `checkpoint ${step} of run ${runId} is neither on this runner nor in ROLLBOOK_SHARED_CHECKPOINT_DIR (${deps.sharedDir})`);
      }
    }
    await setAsideNewerCheckpoints(deps.runsDir, runId, step);
    if (deps.sharedDir) await claimSharedRun(deps.sharedDir, runId, deps.runnerName);
    deps.forgetLog(runId);
    await fsp.rename(staged, path.join(deps.runsDir, runId, "events.jsonl"));
    deps.forgetLog(runId);
    return { last_seq: seq, checkpoint_step: step };
  } finally {
    await fsp.rm(stage, { recursive: true, force: true });
  }
}
