"use client";
/**
 * One rollout in full: the conversation (every message with its role; all model, tool and user text is
 * rendered as text, never as HTML), its task, reward and advantage in its group, metrics, logs, error.
 */
import type { ChatMessage, ToolCall } from "@contracts";
import { fmtMs, fmtNum, fmtSigned } from "../ui/format";
import type { Rollout, RolloutGroup } from "./run-state";
import { advantage } from "./run-state";

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

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function ToolCallView({ call }: { call: ToolCall }) {
  return (
    <div className="mt-1.5 rounded border border-zinc-800 bg-zinc-950/70 px-2 py-1.5">
      <div className="font-mono text-[11px] text-violet-300">
        → {call.function.name}
        <span className="ml-2 text-zinc-600">{call.id}</span>
      </div>
      <pre className="mt-1 font-mono text-[12px] break-words whitespace-pre-wrap text-zinc-300">{prettyJson(call.function.arguments)}</pre>
    </div>
  );
}

export function MessageView({ message, index }: { message: ChatMessage; index: number }) {
  const content = message.content ?? "";
  return (
    <div data-testid="message" data-role={message.role} className={`rounded border-l-2 px-3 py-2 ${ROLE_STYLE[message.role]}`}>
      <div className="mb-1 flex items-center gap-2 text-[11px]">
        <span className={`font-semibold tracking-wide uppercase ${ROLE_LABEL[message.role]}`}>{message.role}</span>
        {message.name && <span className="font-mono text-zinc-500">{message.name}</span>}
        {message.tool_call_id && <span className="font-mono text-zinc-600">↩ {message.tool_call_id}</span>}
        <span className="ml-auto text-zinc-600">#{index}</span>
      </div>
      {content !== "" ? (
        <pre className="font-sans text-[13px] leading-relaxed break-words whitespace-pre-wrap text-zinc-100">{content}</pre>
      ) : !message.tool_calls?.length ? (
        <span className="text-[12px] text-zinc-600 italic">(empty)</span>
      ) : null}
      {message.tool_calls?.map((c) => <ToolCallView key={c.id} call={c} />)}
    </div>
  );
}

function Section({ title, children }: { title: string; children: React.ReactNode }) {
  return (
    <section className="mt-4">
      <h3 className="mb-1.5 text-[11px] tracking-wide text-zinc-500 uppercase">{title}</h3>
      {children}
    </section>
  );
}

export function RolloutDetail({ rollout, group, onClose }: { rollout: Rollout; group?: RolloutGroup; onClose?: () => void }) {
  const adv = advantage(rollout.reward, group);
  const metrics = Object.entries(rollout.metrics);
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

      <div className="mt-3 grid grid-cols-3 gap-2 sm:grid-cols-6">
        <Metric label="Reward" value={fmtNum(rollout.reward)} strong />
        <Metric label="Advantage" value={fmtSigned(adv)} title="reward − group mean" />
        <Metric label="Group mean" value={fmtNum(group?.rewardMean)} />
        <Metric label="Tokens" value={`${rollout.tokens.prompt} + ${rollout.tokens.completion}`} title="prompt + completion" />
        <Metric label="Duration" value={fmtMs(rollout.timings.duration_ms)} />
        <Metric label="Model time" value={fmtMs(rollout.timings.model_ms)} />
      </div>

      {rollout.error && (
        <div role="alert" className="mt-3 rounded border border-red-900 bg-red-950/50 px-3 py-2">
          <div className="text-[12px] font-medium text-red-200">
            {rollout.error.kind}: <span className="font-normal">{rollout.error.message}</span>
          </div>
          {rollout.error.stack && (
            <pre className="mt-1.5 max-h-48 overflow-auto font-mono text-[11px] whitespace-pre-wrap text-red-300/80">{rollout.error.stack}</pre>
          )}
        </div>
      )}

      <Section title={`Transcript (${rollout.messages.length} messages)`}>
        <div className="space-y-2">
          {rollout.messages.map((m, i) => (
            <MessageView key={i} message={m} index={i} />
          ))}
        </div>
      </Section>

      {metrics.length > 0 && (
        <Section title="Metrics">
          <table className="text-[12px]">
            <tbody>
              {metrics.map(([k, v]) => (
                <tr key={k}>
                  <td className="pr-6 font-mono text-zinc-400">{k}</td>
                  <td className="text-right font-mono text-zinc-100 tabular-nums">{fmtNum(v, 4)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
      )}

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

function Metric({ label, value, strong, title }: { label: string; value: string; strong?: boolean; title?: string }) {
  return (
    <div className="rounded border border-zinc-800 bg-zinc-900/60 px-2 py-1.5" title={title}>
      <div className="text-[10px] tracking-wide text-zinc-500 uppercase">{label}</div>
      <div className={`font-mono tabular-nums ${strong ? "text-[15px] text-zinc-50" : "text-[13px] text-zinc-200"}`}>{value}</div>
    </div>
  );
}
