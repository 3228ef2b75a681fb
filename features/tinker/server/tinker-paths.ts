/**
 * Names the Tinker SDK carries between calls, made by Rollbook and read back from the client (so hostile):
 *
 *   tinker://<run id>/sampler_weights/<name>   save_weights_for_sampler(name)  → TinkerWeights (sampler)
 *   tinker://<run id>/weights/<name>           save_state(name)                → TinkerWeights (state)
 *   tss.<base64url JSON>                       a sampling session: {r: run id, s: step} or {b: base model}
 *
 * A path or session id is only ever resolved inside the caller's workspace (tinker-api.ts looks the run up
 * there first); a name is a bounded plain string (no control characters, no '/'), never a file path: the
 * checkpoint it points at is the run's own `checkpoints/<step>`, found by step.
 */
import { classifyModelName, identifierRule, isIdentifier } from "@contracts";
import { TinkerUserError } from "./tinker-futures";

export type WeightsKind = "sampler" | "state";
const SEGMENT: Record<WeightsKind, string> = { sampler: "sampler_weights", state: "weights" };
const NAME = /^[A-Za-z0-9._-]{1,128}$/;

export function weightsName(name: string, field: string): string {
  if (!NAME.test(name) || name === "." || name === "..") throw new TinkerUserError(`${field}: a name of 1 to 128 letters, digits, '.', '_' or '-' (got ${JSON.stringify(name.slice(0, 60))})`, field);
  return name;
}

export const weightsPath = (runId: string, kind: WeightsKind, name: string) => `tinker://${runId}/${SEGMENT[kind]}/${name}`;

export function parseWeightsPath(path: string, field: string): { runId: string; kind: WeightsKind; name: string } {
  const m = /^tinker:\/\/([^/]+)\/(sampler_weights|weights)\/([^/]+)$/.exec(path);
  if (!m || !isIdentifier("run_id", m[1])) throw new TinkerUserError(`${field}: not a Rollbook Tinker path (tinker://<model id>/weights/<name> or …/sampler_weights/<name>): ${JSON.stringify(path.slice(0, 200))}`, field);
  return { runId: m[1]!, kind: m[2] === "weights" ? "state" : "sampler", name: weightsName(m[3]!, field) };
}

export type SamplerTarget = { run: string; step: number } | { base: string };

export function samplingSessionId(target: SamplerTarget): string {
  const value = "run" in target ? { r: target.run, s: target.step } : { b: target.base };
  return `tss.${Buffer.from(JSON.stringify(value)).toString("base64url")}`;
}

export function parseSamplingSession(id: string, field = "sampling_session_id"): SamplerTarget {
  const bad = () => new TinkerUserError(`${field}: unknown sampling session ${JSON.stringify(id.slice(0, 100))}`, field);
  if (!id.startsWith("tss.") || id.length > 600) throw bad();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(id.slice(4), "base64url").toString("utf8"));
  } catch {
    throw bad();
  }
  const v = value as { r?: unknown; s?: unknown; b?: unknown };
  if (isIdentifier("run_id", v.r) && Number.isInteger(v.s) && (v.s as number) >= 0) return { run: v.r as string, step: v.s as number };
  if (typeof v.b === "string") return { base: baseModelName(v.b, field) };
  throw bad();
}

/** A base model as the client names it: only a name the shared grammar calls a base model (never `<run>@<step>`). */
export function baseModelName(name: string, field: string): string {
  const ref = classifyModelName(name);
  if (ref.kind !== "base") throw new TinkerUserError(`${field}: ${JSON.stringify(name.slice(0, 200))} is not a base model name (${ref.kind === "invalid" ? ref.reason : identifierRule("base_model")}); a trained model is sampled by its tinker:// path or its sampling session`, field);
  return name;
}
