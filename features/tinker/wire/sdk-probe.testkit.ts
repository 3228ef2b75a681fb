/**
 * The wire tests' way to the real Tinker SDK: sdk_probe.py run by the python of the venv scripts/tinker-venv.sh
 * builds (tinker==0.38.0; built once in the user cache, minutes the first time, instant after).
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../../..");
const PROBE = path.join(import.meta.dirname, "sdk_probe.py");

/** Time for a first build of the venv (a beforeAll passes it as its timeout). */
export const SDK_SETUP_TIMEOUT_MS = 20 * 60_000;

let python: Promise<string> | undefined;
export function sdkPython(): Promise<string> {
  python ??= run("bash", [path.join(ROOT, "scripts/tinker-venv.sh")], { timeout: SDK_SETUP_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 }).then(
    ({ stdout }) => stdout.trim().split("\n").at(-1)!,
  );
  return python;
}

export interface TensorJson {
  dtype: "float32" | "int64";
  shape: number[] | null;
  values: (number | string)[];
}

export interface ProbeMake {
  sdk_version: string;
  fwdbwd_cases: { name: string; bytes: string; expected: unknown }[];
  refusal_cases: { name: string; bytes: string; field: string; words: string }[];
  bodies: Record<string, unknown[]>;
  descriptor: { messages: Record<string, Record<string, unknown>>; enums: Record<string, Record<string, number>> };
  proto_text: string;
  error_categories: string[];
}

export async function probeMake(): Promise<ProbeMake> {
  const { stdout } = await run(await sdkPython(), [PROBE, "make"], { timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as ProbeMake;
}

export type Attempt<T> = { ok: T; error?: undefined } | { ok?: undefined; error: string };

export interface ProbeReadSpec {
  sample_responses?: Uint8Array[];
  fwdbwd_outputs?: Uint8Array[];
  json?: { kind: string; value: unknown }[];
  status_errors?: { status: number; body: unknown }[];
}

export interface ProbeRead {
  sample_responses: Attempt<{
    sequences: { tokens: number[]; logprobs: (number | string)[] | null; stop_reason: string }[];
    prompt_logprobs: (number | string | null)[] | null;
    topk_prompt_logprobs: unknown;
    prompt_cache_hit_tokens: number;
  }>[];
  fwdbwd_outputs: Attempt<{
    loss_fn_output_type: string;
    loss_fn_outputs: Record<string, TensorJson>[];
    metrics: Record<string, number | string>;
  }>[];
  json: Attempt<Record<string, unknown>>[];
  status_errors: Attempt<{ class: string; str: string; body: unknown }>[];
}

export async function probeRead(spec: ProbeReadSpec): Promise<ProbeRead> {
  const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");
  const input = JSON.stringify({
    ...spec,
    sample_responses: (spec.sample_responses ?? []).map(b64),
    fwdbwd_outputs: (spec.fwdbwd_outputs ?? []).map(b64),
  });
  const py = await sdkPython();
  const child = run(py, [PROBE, "read"], { timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
  child.child.stdin!.end(input);
  const { stdout } = await child;
  return JSON.parse(stdout) as ProbeRead;
}

/** sdk_probe writes NaN and infinities as strings (JSON has no literal for them). */
export const fromJsonNumber = (v: number | string | null): number | null =>
  v === null ? null : typeof v === "number" ? v : v === "NaN" ? Number.NaN : v === "Infinity" ? Infinity : -Infinity;
