"use client";
/** The frozen files a run executed, and its resolved config: what the run ran, not what the editor holds now. */
import { useState } from "react";
import type { ExperimentFiles } from "@contracts";
import { filePaths } from "../editor/files";
import { Tabs } from "../ui/primitives";

type Tab = string;
const RESOLVED = "(resolved config)";

export function RunCode({ files, config, meta }: { files: ExperimentFiles; config: unknown; meta: [string, string][] }) {
  const [tab, setTab] = useState<Tab>("scenario.ts");
  const text = tab === RESOLVED ? JSON.stringify(config, null, 2) : (files[tab] ?? "");
  const lines = text.split("\n");
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
        <div className="min-w-0 flex-1 overflow-auto bg-[#0c0c0f]" data-testid="run-code">
          <table className="font-mono text-[12px] leading-5">
            <tbody>
              {lines.map((l, i) => (
                <tr key={i}>
                  <td className="sticky left-0 bg-[#0c0c0f] pr-3 pl-3 text-right align-top text-zinc-600 select-none">{i + 1}</td>
                  <td className="pr-4 whitespace-pre text-zinc-200">{l}</td>
                </tr>
              ))}
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
