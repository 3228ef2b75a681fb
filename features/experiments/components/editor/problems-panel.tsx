"use client";
/**
 * Under the editor: the runner's check results (click one to jump to it), why a start or save was refused,
 * and the latest run's runtime errors — marked in the editor only while the code is that run's code.
 */
import Link from "next/link";
import type { Diagnostic } from "@contracts";
import { Spinner } from "@/components/ui/primitives";
import type { LatestRuntimeErrors } from "./runtime-markers";
import { userFrames } from "@/components/code/stack-frames";

export interface RuntimeProblems {
  latest: LatestRuntimeErrors;
  /** The editor's code is the run's code: frames point at the right lines. */
  matches: boolean;
  show: boolean;
  onToggle: (show: boolean) => void;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

function Location({ d }: { d: Pick<Diagnostic, "file" | "line" | "column"> }) {
  return (
    <span className="shrink-0 font-mono text-[12px] text-zinc-400">
      {d.file}:{d.line}:{d.column}
    </span>
  );
}

function RuntimeSection({ runtime, onPick }: { runtime: RuntimeProblems; onPick: (d: Pick<Diagnostic, "file" | "line" | "column">) => void }) {
  const { latest, matches, show, onToggle } = runtime;
  return (
    <div className="mt-1" data-testid="runtime-problems">
      <div className="flex flex-wrap items-center gap-x-3 gap-y-1 text-amber-200">
        <span>
          Run #{latest.run.number} ({latest.run.kind}): {plural(latest.run.errorCount, "rollout")} failed
        </span>
        <Link className="text-[12px] text-zinc-400 underline hover:text-zinc-200" href={`/runs/${latest.run.id}`}>
          view run
        </Link>
        {matches ? (
          <label className="flex items-center gap-1.5 text-[12px] text-zinc-400">
            <input type="checkbox" checked={show} onChange={(e) => onToggle(e.target.checked)} />
            mark in the editor
          </label>
        ) : (
          <span className="text-[12px] text-zinc-500">The code has changed since this run, so its errors are not marked in the editor.</span>
        )}
      </div>
      <ul className="mt-0.5 space-y-0.5">
        {latest.errors.map((e, i) => {
          const top = userFrames(e.stack)[0];
          return (
            <li key={i}>
              <button
                type="button"
                disabled={!top || !matches}
                onClick={() => top && onPick(top)}
                className="flex w-full items-baseline gap-2 rounded px-1 py-0.5 text-left enabled:hover:bg-zinc-800 disabled:cursor-default"
              >
                <span className="text-amber-400" aria-hidden>
                  ▲
                </span>
                {top ? <Location d={top} /> : <span className="shrink-0 text-[12px] text-zinc-500">(no frame in your code)</span>}
                <span className="shrink-0 font-mono text-[11px] text-amber-300">{e.kind}</span>
                <span className="min-w-0 break-words text-zinc-200">{e.message}</span>
                <span className="ml-auto shrink-0 text-[11px] text-zinc-500">×{e.count}</span>
              </button>
            </li>
          );
        })}
      </ul>
    </div>
  );
}

export function ProblemsPanel({
  diagnostics,
  error,
  ok,
  saveError,
  busy,
  runtime,
  onPick,
}: {
  diagnostics: readonly Diagnostic[];
  error: { message: string; runId?: string } | null;
  /** A success to report (Check passed). */
  ok: string | null;
  saveError: string | null;
  busy: string | null;
  runtime: RuntimeProblems | null;
  onPick: (d: Pick<Diagnostic, "file" | "line" | "column">) => void;
}) {
  const empty = diagnostics.length === 0 && !error && !ok && !saveError && !busy && !runtime;
  return (
    <div className="flex max-h-60 shrink-0 flex-col border-t border-zinc-800 bg-zinc-900/50">
      <div className="flex h-7 shrink-0 items-center gap-2 px-3 text-[11px] tracking-wide text-zinc-500 uppercase">
        Problems
        {diagnostics.length > 0 && <span className="rounded bg-red-900/80 px-1 text-red-200 normal-case">{diagnostics.length}</span>}
        {busy && <Spinner label={busy} />}
      </div>
      {!empty && (
        <div className="min-h-0 overflow-auto px-3 pb-2" data-testid="problems">
          {saveError && <div className="mb-1 text-red-300">Save failed: {saveError}</div>}
          {ok && (
            <div className="mb-1 text-emerald-300" data-testid="check-ok">
              {ok}
            </div>
          )}
          {error && (
            <div className="mb-1 text-red-300">
              {error.message}
              {error.runId && (
                <>
                  {" "}
                  <Link className="underline" href={`/runs/${error.runId}`}>
                    view run
                  </Link>
                </>
              )}
            </div>
          )}
          <ul className="space-y-0.5">
            {diagnostics.map((d, i) => (
              <li key={i}>
                <button
                  type="button"
                  data-testid="diagnostic"
                  onClick={() => onPick(d)}
                  className="flex w-full items-baseline gap-2 rounded px-1 py-0.5 text-left hover:bg-zinc-800"
                >
                  <span className={d.severity === "warning" ? "text-amber-400" : "text-red-400"} aria-hidden>
                    {d.severity === "warning" ? "▲" : "●"}
                  </span>
                  <Location d={d} />
                  <span className="min-w-0 break-words whitespace-pre-wrap text-zinc-200">{d.message}</span>
                </button>
              </li>
            ))}
          </ul>
          {runtime && <RuntimeSection runtime={runtime} onPick={onPick} />}
        </div>
      )}
    </div>
  );
}
