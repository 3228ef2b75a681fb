"use client";
/**
 * The frozen files a run executed, and its resolved config: what the run ran, not what the editor holds now.
 * `focus` opens a file at a line (a stack frame clicked in a rollout's error) and highlights that line.
 */
import { useEffect, useRef, useState } from "react";
import type { ExperimentFiles } from "@contracts";
import { filePaths } from "@/components/code/files";
import { Tabs } from "@/components/ui/primitives";

type Tab = string;
const RESOLVED = "(resolved config)";

export interface CodeFocus {
  file: string;
  line: number;
  column: number;
  /** Changes on every request, so opening the same frame twice scrolls to it again. */
  nonce: number;
}

export function RunCode({ files, config, meta, focus }: { files: ExperimentFiles; config: unknown; meta: [string, string][]; focus?: CodeFocus | null }) {
  const [tab, setTab] = useState<Tab>(focus && Object.hasOwn(files, focus.file) ? focus.file : "scenario.ts");
  // A new focus request switches to its file (adjusting state while rendering, not in an effect).
  const [seenFocus, setSeenFocus] = useState(focus?.nonce);
  if (focus && focus.nonce !== seenFocus) {
    setSeenFocus(focus.nonce);
    if (Object.hasOwn(files, focus.file)) setTab(focus.file);
  }
  const text = tab === RESOLVED ? JSON.stringify(config, null, 2) : (files[tab] ?? "");
  const lines = text.split("\n");
  const highlighted = focus && focus.file === tab ? focus.line : null;

  const scrollRef = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (highlighted === null) return;
    scrollRef.current?.querySelector(`[data-line="${highlighted}"]`)?.scrollIntoView({ block: "center" });
  }, [highlighted, tab, focus?.nonce]);

  return (
    <div className="flex min-h-0 flex-1 flex-col">
      <Tabs
        label="Run files"
        className="shrink-0 px-2"
        value={tab}
        onChange={setTab}
        tabs={[
          ...filePaths(files).map((n) => ({ id: n, label: <span className="font-mono text-[12px]">{n}</span> })),
          { id: RESOLVED, label: <span className="text-[12px]">resolved config</span> },
        ]}
      />
      <div className="flex min-h-0 flex-1">
        <div ref={scrollRef} className="min-w-0 flex-1 overflow-auto bg-[#0c0c0f]" data-testid="run-code">
          <table className="font-mono text-[12px] leading-5">
            <tbody>
              {lines.map((l, i) => {
                const hit = highlighted === i + 1;
                return (
                  <tr
                    key={i}
                    data-line={i + 1}
                    data-testid={hit ? "highlighted-line" : undefined}
                    aria-current={hit ? "location" : undefined}
                    className={hit ? "bg-amber-400/15" : undefined}
                  >
                    <td
                      className={`sticky left-0 pr-3 pl-3 text-right align-top select-none ${
                        hit ? "border-l-2 border-amber-400 bg-[#2a2413] text-amber-200" : "bg-[#0c0c0f] text-zinc-600"
                      }`}
                    >
                      {i + 1}
                    </td>
                    <td className="pr-4 whitespace-pre text-zinc-200">{l}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
        <dl className="hidden w-72 shrink-0 overflow-auto border-l border-zinc-800 p-3 text-[12px] lg:block">
          {meta.map(([k, v]) => (
            <div key={k} className="mb-2">
              <dt className="text-[10px] tracking-wide text-zinc-500 uppercase">{k}</dt>
              <dd className="font-mono break-all text-zinc-300">{v}</dd>
            </div>
          ))}
        </dl>
      </div>
    </div>
  );
}
