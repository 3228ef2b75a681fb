/**
 * The engine's chat behind the runner's fair queue, for callers that are not a rollout's ctx.chat (which
 * queues itself, with its rollout's clock): a run's judge on the runner's own engine waits for a slot as one
 * more rollout of its run, so a judge-heavy reward cannot take the engine from other runs.
 */
import type { EngineClient } from "./client";
import type { FairCall, FairQueue } from "./fair-queue";

export function queuedChat(
  engine: Pick<EngineClient, "chat">,
  slots: Pick<FairQueue, "run"> | undefined,
  call: Omit<FairCall, "signal" | "clock">,
): Pick<EngineClient, "chat"> {
  if (!slots) return engine;
  return { chat: (body, signal) => slots.run({ ...call, signal }, () => engine.chat(body, signal)) };
}
