/**
 * A rollout's figures as the list and the transcript show them. Absent is not zero: a count or a time
 * Rollbook does not know (an ART client's rollout: no prompt ids, no timings; contracts/run.ts) reads "—",
 * never "0" or "0 ms", which would say the prompt was empty or the model instant.
 */
import type { Trajectory, TrajectoryTurn } from "@contracts";
import { fmtInt, fmtMs } from "@/components/ui/format";

/** "prompt + completion" tokens; `sep` " + " in the transcript, "+" in the narrow list column. */
export function fmtTokens(tokens: Trajectory["tokens"], sep = " + "): string {
  return `${fmtInt(tokens.prompt)}${sep}${fmtInt(tokens.completion)}`;
}

/** One model call's figures: "5 + 2 tok · 7 ms", and its finish reason when it is not a plain stop. */
export function fmtTurn(turn: TrajectoryTurn): string {
  const finish = turn.finish_reason && turn.finish_reason !== "stop" ? ` · ${turn.finish_reason}` : "";
  return `${fmtTokens({ prompt: turn.prompt_tokens, completion: turn.completion_tokens })} tok · ${fmtMs(turn.model_ms)}${finish}`;
}

/** Duration and model time, "—" where not measured. */
export function fmtTimings(timings: Trajectory["timings"]): { duration: string; model: string } {
  return { duration: fmtMs(timings.duration_ms), model: fmtMs(timings.model_ms) };
}
