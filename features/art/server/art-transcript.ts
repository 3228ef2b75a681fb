/**
 * ART trajectories → Rollbook rollouts (contracts Trajectory), pure. The transcript is ART's
 * messages_and_choices in order: message dicts as they are (content parts joined as text), each Choice as
 * the assistant turn it sampled (content and tool calls), and each additional history after it, introduced
 * by a system line. Token counts come from the choices' logprobs (one entry per sampled token). ART sends
 * no prompt ids or counts, and Rollbook has no tokenizer here, so a prompt's count is null (unknown; the page
 * shows "—"), not 0: a log-only model's rollouts keep it so, and a training job's are stored again with the
 * counts once the runner has rendered the prompts (withPromptTokens). Nor does ART send model time, so that
 * is null too, and a rollout's duration is its `duration` metric (seconds) when it logs one. A group's exceptions (rollouts that raised) become failed
 * rollouts, so the exception rate and the error list say what they say for a scenario run.
 */
import type { ChatMessage, Trajectory, TrajectoryTurn } from "@contracts";
import type { ArtChoice, ArtMessage, ArtTrajectory, ArtTrajectoryGroup } from "../schema";

type Item = ArtMessage | ArtChoice;

export const isChoice = (x: Item): x is ArtChoice => "message" in x && "index" in x;

const ROLE: Record<ArtMessage["role"], ChatMessage["role"]> = {
  system: "system",
  developer: "system",
  user: "user",
  assistant: "assistant",
  tool: "tool",
  function: "tool",
};

/** Content parts → text; a non-text part (image, audio, file) is named, not dropped silently. */
function contentText(content: ArtMessage["content"]): string {
  if (content == null) return "";
  if (typeof content === "string") return content;
  return content.map((p) => (typeof p.text === "string" ? p.text : `[${p.type}]`)).join("");
}

function toolCalls(calls: ArtMessage["tool_calls"]): ChatMessage["tool_calls"] {
  if (!calls || calls.length === 0) return undefined;
  return calls.map((c) => ({ id: c.id, type: "function" as const, function: { name: c.function.name, arguments: c.function.arguments } }));
}

export function fromMessage(m: ArtMessage): ChatMessage {
  const calls = toolCalls(m.tool_calls);
  return {
    role: ROLE[m.role],
    content: contentText(m.content),
    ...(m.name !== undefined ? { name: m.name } : {}),
    ...(calls ? { tool_calls: calls } : {}),
    ...(m.tool_call_id !== undefined ? { tool_call_id: m.tool_call_id } : {}),
  };
}

export function fromChoice(c: ArtChoice): ChatMessage {
  const calls = toolCalls(c.message.tool_calls);
  return { role: "assistant", content: c.message.content ?? "", ...(calls ? { tool_calls: calls } : {}) };
}

/** One history's items as transcript messages, and a turn for each sampled reply. */
function transcriptOf(items: readonly Item[], messages: ChatMessage[], turns: TrajectoryTurn[]): void {
  for (const item of items) {
    if (isChoice(item)) {
      turns.push({
        message_index: messages.length,
        prompt_tokens: null,
        completion_tokens: item.logprobs?.content?.length ?? 0,
        model_ms: null,
        finish_reason: item.finish_reason,
      });
      messages.push(fromChoice(item));
    } else {
      messages.push(fromMessage(item));
    }
  }
}

/** ART metric values: numbers, and booleans as 0/1 (Rollbook's metrics are numbers). */
function numericMetrics(m: Record<string, number | boolean>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(m)) {
    const n = typeof v === "boolean" ? Number(v) : v;
    if (Number.isFinite(n)) out[k] = n;
  }
  return out;
}

export interface RolloutContext {
  /** Unique per log call (its first seq): trajectory ids must never repeat across calls. */
  idPrefix: string;
  step: number;
  split: "train" | "val";
  /** What sampled it, as far as Rollbook knows (the run's base model). */
  model: string;
  now: number;
}

function fromArtTrajectory(t: ArtTrajectory, group: number, index: number, ctx: RolloutContext): Trajectory {
  const messages: ChatMessage[] = [];
  const turns: TrajectoryTurn[] = [];
  transcriptOf(t.messages_and_choices, messages, turns);
  t.additional_histories.forEach((h, i) => {
    messages.push({ role: "system", content: `— additional history ${i + 1} of ${t.additional_histories.length} —` });
    transcriptOf(h.messages_and_choices, messages, turns);
  });
  const completion = turns.reduce((n, x) => n + x.completion_tokens, 0);
  const duration = typeof t.metrics.duration === "number" && t.metrics.duration >= 0 ? t.metrics.duration * 1000 : null;
  return {
    id: `${ctx.idPrefix}-g${group}-t${index}`,
    step: ctx.step,
    group,
    task_index: group,
    split: ctx.split,
    task: Object.keys(t.metadata).length > 0 ? t.metadata : null,
    messages,
    reward: t.reward,
    metrics: numericMetrics(t.metrics),
    error: null,
    model: ctx.model,
    tokens: { prompt: null, completion },
    timings: { started_at: ctx.now, duration_ms: duration, model_ms: null },
    logs: t.logs,
    turns,
  };
}

function fromException(e: ArtTrajectoryGroup["exceptions"][number], group: number, index: number, ctx: RolloutContext, metadata: ArtTrajectoryGroup["metadata"]): Trajectory {
  return {
    id: `${ctx.idPrefix}-g${group}-x${index}`,
    step: ctx.step,
    group,
    task_index: group,
    split: ctx.split,
    task: Object.keys(metadata).length > 0 ? metadata : null,
    messages: [],
    reward: null,
    metrics: {},
    error: { kind: "thrown", message: `${e.type}: ${e.message}`, ...(e.traceback ? { stack: e.traceback } : {}) },
    model: ctx.model,
    // Nothing was sampled that Rollbook knows of: no prompt was sent (0 is true here), and no time was measured.
    tokens: { prompt: 0, completion: 0 },
    timings: { started_at: ctx.now, duration_ms: null, model_ms: null },
    logs: [],
  };
}

/** Each group's rollouts (its trajectories, then its exceptions as failed rollouts), in the groups' order. */
export function rolloutsOf(groups: readonly ArtTrajectoryGroup[], ctx: RolloutContext): Trajectory[][] {
  return groups.map((g, gi) => [
    ...g.trajectories.map((t, ti) => fromArtTrajectory(t, gi, ti, ctx)),
    ...g.exceptions.map((e, ei) => fromException(e, gi, ei, ctx, g.metadata)),
  ]);
}
