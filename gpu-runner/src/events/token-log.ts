/**
 * Each rollout's exact token sequences (prompt and sampled token ids, the mask of what the model sampled,
 * the sampling logprobs — what training sees), one JSON line per rollout in runs/<run>/tokens.jsonl, next
 * to the run's checkpoints. Kept out of the rollout.finished event on purpose: at ~25 KB per long rollout
 * they would bloat the in-memory event log, the stored events and every socket message, while only an
 * export asks for them (GET /runs/<run>/tokens.jsonl, gpu-runner/src/http/routes.ts).
 */
import path from "node:path";
import type { TokenSequence } from "../../../contracts";
import { appendWhole } from "./append-whole";
import { assertSafeRunId } from "./event-log";

export interface TokenLine {
  trajectory_id: string;
  sequences: TokenSequence[];
}

export function tokenLogFile(runsDir: string, runId: string): string {
  assertSafeRunId(runId);
  return path.join(runsDir, runId, "tokens.jsonl");
}

/** Appends one rollout's sequences (a failure to write is logged, never fails the rollout). */
export function appendTokenLine(runsDir: string, runId: string, line: TokenLine, onError: (message: string) => void): void {
  try {
    appendWhole(tokenLogFile(runsDir, runId), JSON.stringify(line) + "\n");
  } catch (e) {
    onError(`could not record the token ids of ${line.trajectory_id}: ${(e as Error).message}`);
  }
}
