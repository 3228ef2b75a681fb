/**
 * A run's recorded token sequences (runs/<run>/tokens.jsonl on its runner: prompt and sampled token ids, the
 * mask of sampled tokens, sampling logprobs), fetched for an export that asks for them. They stay on the
 * runner, next to the checkpoints, rather than in Postgres: only exports read them.
 */
import { TokenSequence } from "@contracts";
import { z } from "zod";
import { AppError } from "@/server/errors";
import { runnerFetch } from "@/server/runner-client";
import type { DbOrTx } from "@/server/db-types";

/** Bigger than this is refused (export a step or a split at a time). */
export const MAX_TOKEN_LOG_BYTES = 512 * 1024 * 1024;

const TokenLine = z.object({ trajectory_id: z.string(), sequences: z.array(TokenSequence) });

export async function fetchTokenLog(db: DbOrTx, run: { id: string; number: number; runnerId: string | null }): Promise<Map<string, TokenSequence[]>> {
  if (!run.runnerId) throw new AppError("NOT_FOUND", `run #${run.number} never reached a runner: it has no token ids`);
  const res = await runnerFetch(db, run.runnerId, `/runs/${encodeURIComponent(run.id)}/tokens.jsonl`);
  if (res.status === 404) throw new AppError("NOT_FOUND", `run #${run.number}'s token ids are not on its runner (recorded only since they were added, and kept with its checkpoints)`);
  if (!res.ok) throw new AppError("RUNNER_ERROR", `run #${run.number}'s runner answered ${res.status} for its token ids`);
  const size = Number(res.headers.get("content-length") ?? 0);
  if (size > MAX_TOKEN_LOG_BYTES) throw new AppError("BAD_INPUT", `run #${run.number}'s token ids are ${size} bytes: export one step (?step=N) at a time`);
  const byId = new Map<string, TokenSequence[]>();
  for (const line of (await res.text()).split("\n")) {
    if (!line) continue;
    const parsed = TokenLine.safeParse(JSON.parse(line));
    // A torn last line (the runner killed mid-write) is skipped rather than failing the whole export.
    if (parsed.success) byId.set(parsed.data.trajectory_id, parsed.data.sequences);
  }
  return byId;
}
