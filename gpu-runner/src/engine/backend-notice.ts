/**
 * What the runner tells its operator about how its engine samples, from the engine's health alone (pure).
 *
 * A GPU with the transformers backend is the setup that looks fine and is not: on an H200 it samples about
 * 10 tokens/s per stream (9–13 measured), so a run crawls with no error anywhere. vLLM is what a GPU runner
 * needs; scripts/setup.sh installs it with ROLLBOOK_BACKEND=vllm. The runner logs the notice once per engine
 * process (supervisor.ts) and sends it in its status, which the Runners page shows (docs/deploy.md).
 */
import type { RunnerNotice } from "../../../contracts";

export const SLOW_SAMPLING = "slow_sampling";

export const SLOW_SAMPLING_MESSAGE =
  "This runner has a GPU but samples with the transformers backend (about 10 tokens/s per stream on an H200): " +
  "install vLLM with `ROLLBOOK_BACKEND=vllm bash scripts/setup.sh` and restart the runner with ROLLBOOK_BACKEND=vllm " +
  '(docs/deploy.md, "vLLM").';

/**
 * The notice for an engine on CUDA ("cuda", "cuda:0", …) with the transformers backend; null for anything
 * else: a CPU engine (transformers is all it has), vLLM, no backend yet ("none" while the model loads), or a
 * health body without those fields (an older engine, no answer).
 */
export function backendNotice(health: unknown): RunnerNotice | null {
  if (!health || typeof health !== "object") return null;
  const { backend, device } = health as { backend?: unknown; device?: unknown };
  if (typeof backend !== "string" || typeof device !== "string") return null;
  if (!device.startsWith("cuda") || backend !== "transformers") return null;
  return { kind: SLOW_SAMPLING, message: SLOW_SAMPLING_MESSAGE };
}

/** Every notice the engine's health calls for (today at most one), as the runner's status carries them. */
export function engineNotices(health: unknown): RunnerNotice[] {
  const notice = backendNotice(health);
  return notice ? [notice] : [];
}
