"use client";
/**
 * A failed rollout's error: its kind, message and stack as the runner mapped it to the user's files. Each
 * frame in the experiment's own code is a link that opens the run's code at that file and line (a plain
 * click stays on the page; a new-tab click opens the same place by URL). SDK frames stay text.
 */
import type { RolloutError } from "@contracts";
import { parseStack, type StackFrame } from "@/components/code/stack-frames";

export type OpenFrame = (frame: Pick<StackFrame, "file" | "line" | "column">) => void;

const KIND_HINT: Record<RolloutError["kind"], string> = {
  thrown: "your code threw",
  timeout: "the rollout ran past its wall-clock or CPU limit",
  starved: "the runner's CPUs were busy: its wall clock ran out while it waited for a CPU (not your code)",
  memory: "the rollout's isolate ran out of heap",
  reward: "the reward function threw or returned a non-number",
  model: "the model call failed",
  mcp: "an MCP server was unavailable or failed",
  limit: "a sandbox cap was exceeded",
  engine_connection: "the runner lost its connection to the engine on this model call and again when it sent the call once more (the runner's failure, not your code)",
};

/** The run page's URL that opens the code tab at a frame. */
export function frameHref(f: Pick<StackFrame, "file" | "line" | "column">): string {
  const q = new URLSearchParams({ tab: "code", file: f.file, line: String(f.line), column: String(f.column) });
  return `?${q.toString()}`;
}

function StackView({ stack, onOpenFrame }: { stack: string; onOpenFrame?: OpenFrame }) {
  return (
    <pre data-testid="rollout-stack" className="mt-1.5 max-h-56 overflow-auto font-mono text-[11px] whitespace-pre-wrap text-red-300/80">
      {parseStack(stack).map((l, i) => {
        const f = l.frame;
        if (!f || !onOpenFrame) return <div key={i}>{l.text}</div>;
        const location = `${f.file}:${f.line}:${f.column}`;
        const at = l.text.lastIndexOf(location);
        return (
          <div key={i}>
            {l.text.slice(0, at)}
            <a
              href={frameHref(f)}
              data-testid="stack-frame"
              title={`Open ${location} in the run's code`}
              onClick={(e) => {
                if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
                e.preventDefault();
                onOpenFrame(f);
              }}
              className="text-red-100 underline decoration-red-400/60 underline-offset-2 hover:decoration-red-200"
            >
              {location}
            </a>
            {l.text.slice(at + location.length)}
          </div>
        );
      })}
    </pre>
  );
}

export function RolloutErrorView({ error, onOpenFrame }: { error: RolloutError; onOpenFrame?: OpenFrame }) {
  return (
    <div role="alert" data-testid="rollout-error-detail" className="mt-3 rounded border border-red-900 bg-red-950/50 px-3 py-2">
      <div className="flex flex-wrap items-baseline gap-x-2 text-[12px] text-red-200">
        <span className="rounded bg-red-900/80 px-1.5 font-mono font-semibold" title={KIND_HINT[error.kind]}>
          {error.kind}
        </span>
        <span className="break-words whitespace-pre-wrap">{error.message}</span>
      </div>
      <div className="mt-0.5 text-[11px] text-red-300/60">{KIND_HINT[error.kind]}</div>
      {error.stack && <StackView stack={error.stack} onOpenFrame={onOpenFrame} />}
    </div>
  );
}
