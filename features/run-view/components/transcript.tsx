"use client";
/**
 * One rollout in full: the conversation (every message with its role; all model, tool and user text is
 * rendered as text, never as HTML), its task, reward and advantage in its group, metrics, logs, error.
 */
import type { ChatMessage, ToolCall, TrajectoryTurn } from "@contracts";
import { fmtInt, fmtNum, fmtSigned } from "@/components/ui/format";
import { fmtTimings, fmtTokens, fmtTurn } from "./rollout-figures";
import { RolloutErrorView, type OpenFrame } from "./rollout-error";
import type { RolloutGroup, WholeRollout } from "./run-state";
import { rolloutAdvantage } from "./run-state";
import { SIGNALS, trainedAdvantageLabel } from "@contracts";
import { TokensToggle } from "@/features/token-view";

const ROLE_STYLE: Record<ChatMessage["role"], string> = {
  system: "border-zinc-700 bg-zinc-900/60",
  user: "border-sky-900 bg-sky-950/30",
  assistant: "border-emerald-900 bg-emerald-950/25",
  tool: "border-violet-900 bg-violet-950/25",
};

const ROLE_LABEL: Record<ChatMessage["role"], string> = {
  system: "text-zinc-400",
  user: "text-sky-300",
  assistant: "text-emerald-300",
  tool: "text-violet-300",
};

/** Pretty JSON when the text parses as JSON, else null (the text is then shown as it is). */
export function prettyJson(text: string): string | null {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return null;
  }
}

/** Long bodies start folded so a many-turn transcript stays scannable; short ones start open. */
const startsOpen = (text: string) => text.length <= 600 && text.split("\n").length <= 12;

function ToolCallView({ call }: { call: ToolCall }) {
  const pretty = prettyJson(call.function.arguments);
  return (
    <details data-testid="tool-call" open={startsOpen(pretty ?? call.function.arguments)} className="mt-1.5 rounded border border-zinc-800 bg-zinc-950/70">
      <summary className="cursor-pointer px-2 py-1 font-mono text-[11px] text-violet-300 select-none">
        → <span data-testid="tool-call-name">{call.function.name}</span>
        <span className="ml-2 text-zinc-600">{call.id}</span>
        {pretty === null && (
          <span data-testid="tool-call-invalid" className="ml-2 rounded bg-amber-950 px-1 text-amber-300 ring-1 ring-amber-800 ring-inset">
            arguments are not valid JSON (shown raw)
          </span>
        )}
      </summary>
      <pre className="border-t border-zinc-800 px-2 py-1.5 font-mono text-[12px] break-words whitespace-pre-wrap text-zinc-300">
        {pretty ?? call.function.arguments}
      </pre>
    </details>
  );
}

/** A tool message's content: folded when long, pretty-printed when it is JSON. */
function ToolResultView({ content }: { content: string }) {
  const pretty = prettyJson(content);
  const text = pretty ?? content;
  const lines = text.split("\n").length;
  return (
    <details data-testid="tool-result" open={startsOpen(text)}>
      <summary className="cursor-pointer text-[11px] text-zinc-500 select-none">
        result · {lines} line{lines === 1 ? "" : "s"}
        {pretty !== null && " · JSON"}
      </summary>
      <pre className="mt-1 font-mono text-[12px] leading-relaxed break-words whitespace-pre-wrap text-zinc-100">{text}</pre>
    </details>
  );
}

/** One model call's figures, shown on the assistant message it sampled. */
function TurnFigures({ turn }: { turn: TrajectoryTurn }) {
  return (
    <span data-testid="turn-figures" className="font-mono text-zinc-500 tabular-nums" title="this model call: prompt + completion tokens, engine latency, finish reason">
      {fmtTurn(turn)}
    </span>
  );
}

export function MessageView({ message, index, toolName, turn }: { message: ChatMessage; index: number; toolName?: string; turn?: TrajectoryTurn }) {
  const content = message.content ?? "";
  const name = message.name ?? (message.role === "tool" ? toolName : undefined);
  return (
    <div data-testid="message" data-role={message.role} className={`rounded border-l-2 px-3 py-2 ${ROLE_STYLE[message.role]}`}>
      <div className="mb-1 flex items-center gap-2 text-[11px]">
        <span className={`font-semibold tracking-wide uppercase ${ROLE_LABEL[message.role]}`}>{message.role}</span>
        {name && <span className="font-mono text-violet-300/90">{name}</span>}
        {message.tool_call_id && <span className="font-mono text-zinc-600">↩ {message.tool_call_id}</span>}
        <span className="ml-auto flex items-center gap-3">
          {turn && <TurnFigures turn={turn} />}
          <span className="text-zinc-600">#{index}</span>
        </span>
      </div>
      {message.role === "tool" && content !== "" ? (
        <ToolResultView content={content} />
      ) : content !== "" ? (
        <pre className="font-sans text-[13px] leading-relaxed break-words whitespace-pre-wrap text-zinc-100">{content}</pre>
      ) : !message.tool_calls?.length ? (
        <span className="text-[12px] text-zinc-600 italic">(empty)</span>
      ) : null}
      {message.tool_calls?.map((c) => <ToolCallView key={c.id} call={c} />)}
    </div>
  );
}

/** The tool each tool_call_id called, so a tool message without a name still says which tool answered. */
function toolNamesById(messages: readonly ChatMessage[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of messages) for (const c of m.tool_calls ?? []) out.set(c.id, c.function.name);
  return out;
}

function Section({ title, children, testId }: { title: string; children: React.ReactNode; testId?: string }) {
  return (
    <section className="mt-4" data-testid={testId}>
      <h3 className="mb-1.5 text-[11px] tracking-wide text-zinc-500 uppercase">{title}</h3>
      {children}
    </section>
  );
}

export function RolloutDetail({
  rollout,
  group,
  onClose,
  onOpenFrame,
  runId,
  runKind,
  scaleRewards = true,
}: {
  rollout: WholeRollout;
  /** The run's kind: an ART run's rollouts have no returned output. */
  runKind?: string;
  group?: RolloutGroup;
  /** The run's trainer.scale_rewards: which advantage the trainer used. */
  scaleRewards?: boolean;
  onClose?: () => void;
  /** The rollout's run: enables the Tokens section (token view). */
  runId?: string;
  /** Open the run's code at a stack frame of the user's files. */
  onOpenFrame?: OpenFrame;
}) {
  const adv = rolloutAdvantage(rollout.id, group, scaleRewards);
  const toolNames = toolNamesById(rollout.messages);
  const turnAt = new Map((rollout.turns ?? []).map((t) => [t.message_index, t]));
  const timings = fmtTimings(rollout.timings);
  return (
    <div className="p-4" data-testid="rollout-detail">
      <div className="flex items-start gap-3">
        <div className="min-w-0">
          <div className="flex flex-wrap items-center gap-2">
            <h2 className="text-[14px] font-semibold text-zinc-100">
              {rollout.split === "val" ? "Eval rollout" : "Rollout"} · step {rollout.step} · group {rollout.group}
            </h2>
            {rollout.error && (
              <span className="rounded bg-red-900/70 px-1.5 py-0.5 font-mono text-[11px] text-red-200">{rollout.error.kind}</span>
            )}
          </div>
          <div className="mt-0.5 font-mono text-[11px] text-zinc-500">
            {rollout.id} · task {rollout.task_index} · {rollout.model}
          </div>
        </div>
        {onClose && (
          <button type="button" onClick={onClose} aria-label="Close rollout" className="ml-auto rounded px-2 text-zinc-500 hover:bg-zinc-800 hover:text-zinc-200">
            ✕
          </button>
        )}
      </div>

      <div className="mt-3 grid gap-2" style={{ gridTemplateColumns: "repeat(auto-fill, minmax(7.5rem, 1fr))" }}>
        <Metric label="Reward" value={fmtNum(rollout.reward)} strong />
        <Metric label={SIGNALS.advantage.label} value={fmtSigned(adv.raw)} title={SIGNALS.advantage.definition} testId="rollout-advantage" />
        <Metric label={trainedAdvantageLabel(scaleRewards)} value={fmtSigned(adv.trained)} title={SIGNALS.trainedAdvantage.definition} testId="rollout-trained-advantage" />
        <Metric label="Group mean" value={fmtNum(group?.rewardMean)} />
        <Metric label="Tokens" value={fmtTokens(rollout.tokens)} title={rollout.tokens.prompt === null ? "prompt + completion (the prompt's count is not known: it was not tokenised by Rollbook)" : "prompt + completion"} testId="rollout-tokens" />
        <Metric label="Duration" value={timings.duration} testId="rollout-duration" />
        <Metric label="Model time" value={timings.model} testId="rollout-model-time" />
      </div>

      <AgentMetrics metrics={rollout.metrics} />

      <OtherMetrics metrics={rollout.metrics} />

      {rollout.error && <RolloutErrorView error={rollout.error} onOpenFrame={onOpenFrame} />}

      <Section title={`Transcript (${rollout.messages.length} messages)`}>
        <div className="space-y-2">
          {rollout.messages.map((m, i) => (
            <MessageView key={i} message={m} index={i} toolName={m.tool_call_id ? toolNames.get(m.tool_call_id) : undefined} turn={turnAt.get(i)} />
          ))}
        </div>
      </Section>

      {/* An ART client's rollout has no returned output (only a runner's scenario returns one): nothing to say. */}
      {runKind !== "art" && runKind !== "tinker" && <OutputView rollout={rollout} />}

      {runId && <TokensToggle runId={runId} rolloutId={rollout.id} />}

      <Section title={`Logs (${rollout.logs.length})`}>
        {rollout.logs.length === 0 ? (
          <div className="text-[12px] text-zinc-600">Nothing logged (use ctx.log in the scenario).</div>
        ) : (
          <pre className="max-h-64 overflow-auto rounded bg-zinc-900 p-2 font-mono text-[12px] whitespace-pre-wrap text-zinc-300">
            {rollout.logs.join("\n")}
          </pre>
        )}
      </Section>

      <Section title="Task">
        <pre className="max-h-64 overflow-auto rounded bg-zinc-900 p-2 font-mono text-[12px] whitespace-pre-wrap text-zinc-300">
          {JSON.stringify(rollout.task, null, 2)}
        </pre>
      </Section>
    </div>
  );
}

/** What the scenario returned (the reward's `output`), pretty JSON, folded when long. */
function OutputView({ rollout }: { rollout: WholeRollout }) {
  if (rollout.output === undefined) {
    return (
      <Section title="Returned output" testId="rollout-output">
        <div className="text-[12px] text-zinc-600">Not recorded (a rollout from before outputs were kept, or an output over 100,000 characters).</div>
      </Section>
    );
  }
  const text = typeof rollout.output === "string" ? rollout.output : (JSON.stringify(rollout.output, null, 2) ?? "null");
  const lines = text.split("\n").length;
  return (
    <Section title="Returned output" testId="rollout-output">
      <details open={startsOpen(text)} className="rounded bg-zinc-900">
        <summary className="cursor-pointer px-2 py-1 text-[11px] text-zinc-500 select-none">
          {typeof rollout.output === "string" ? "text" : rollout.output === null ? "null" : Array.isArray(rollout.output) ? "array" : typeof rollout.output} · {lines} line
          {lines === 1 ? "" : "s"}
        </summary>
        <pre className="max-h-80 overflow-auto border-t border-zinc-800 p-2 font-mono text-[12px] whitespace-pre-wrap text-zinc-300">{text}</pre>
      </details>
    </Section>
  );
}

/** The metrics the runner records itself (docs/sdk.md, "Metrics recorded for you"), in this order. */
const AGENT_METRICS: { key: string; label: string; title: string; format: (v: number) => string; warn?: boolean }[] = [
  { key: "turns", label: "Turns", title: "model calls the rollout made", format: fmtInt },
  { key: "tool_calls", label: "Tool calls", title: "well-formed tool calls", format: fmtInt },
  { key: "malformed_tool_calls", label: "Malformed calls", title: "tool calls that could not be parsed or named an unknown tool", format: fmtInt, warn: true },
  { key: "tool_errors", label: "Tool errors", title: "tool calls answered with an error (bad arguments, execute threw)", format: fmtInt, warn: true },
  { key: "judge_tokens", label: "Judge tokens", title: "tokens judges used on this rollout", format: fmtInt },
  { key: "judge_cost_usd", label: "Judge cost", title: "what judges cost this rollout", format: (v) => `$${v.toFixed(v > 0 && v < 0.01 ? 5 : 4)}` },
  { key: "independent_reward", label: "Independent reward", title: "the default export's reward, when a groupReward replaced it", format: (v) => fmtNum(v) },
];
const AGENT_KEYS = new Set(AGENT_METRICS.map((m) => m.key));

function AgentMetrics({ metrics }: { metrics: Readonly<Record<string, number>> }) {
  const shown = AGENT_METRICS.filter((m) => metrics[m.key] !== undefined);
  if (shown.length === 0) return null;
  return (
    <div className="mt-2 grid grid-cols-3 gap-2 sm:grid-cols-6" data-testid="agent-metrics">
      {shown.map((m) => {
        const v = metrics[m.key]!;
        return <Metric key={m.key} label={m.label} title={`${m.key}: ${m.title}`} value={m.format(v)} warn={m.warn && v > 0} />;
      })}
    </div>
  );
}

/** Everything else: the reward function's own metrics and any the runner adds later. */
function OtherMetrics({ metrics }: { metrics: Readonly<Record<string, number>> }) {
  const rest = Object.entries(metrics).filter(([k]) => !AGENT_KEYS.has(k));
  if (rest.length === 0) return null;
  return (
    <Section title="Reward components & metrics">
      <table className="text-[12px]" data-testid="rollout-metrics">
        <tbody>
          {rest.map(([k, v]) => (
            <tr key={k}>
              <td className="pr-6 font-mono text-zinc-400">{k}</td>
              <td className="text-right font-mono text-zinc-100 tabular-nums">{fmtNum(v, 4)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Section>
  );
}

function Metric({ label, value, strong, title, warn, testId }: { label: string; value: string; strong?: boolean; title?: string; warn?: boolean; testId?: string }) {
  return (
    <div className={`rounded border px-2 py-1.5 ${warn ? "border-amber-800 bg-amber-950/40" : "border-zinc-800 bg-zinc-900/60"}`} title={title} data-testid={testId}>
      <div className="text-[10px] tracking-wide text-zinc-500 uppercase">{label}</div>
      <div className={`font-mono tabular-nums ${strong ? "text-[15px] text-zinc-50" : "text-[13px] text-zinc-200"}`}>{value}</div>
    </div>
  );
}
