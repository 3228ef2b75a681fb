"use client";
/**
 * The frozen configs side by side, one row per key path, differences only unless "show all" is on. A
 * value that differs from the baseline's is highlighted. Values are JSON text, shown as text.
 */
import { useState } from "react";
import type { RouterOutputs } from "@/components/trpc";
import { runColor } from "./colors";

type ConfigDiffRow = RouterOutputs["compare"]["runs"]["configDiff"][number];

export function ConfigDiff({ rows, runs, baselineIndex }: { rows: readonly ConfigDiffRow[]; runs: readonly { id: string; number: number }[]; baselineIndex: number }) {
  const [showAll, setShowAll] = useState(false);
  const differing = rows.filter((r) => !r.same).length;
  const shown = showAll ? rows : rows.filter((r) => !r.same);
  return (
    <div>
      <div className="mb-2 flex items-center gap-3 text-[12px] text-zinc-400">
        <span data-testid="config-diff-count">
          {differing === 0 ? "The configs are identical" : `${differing} of ${rows.length} keys differ`}
        </span>
        <label className="flex items-center gap-1.5">
          <input type="checkbox" checked={showAll} onChange={(e) => setShowAll(e.target.checked)} />
          show all keys
        </label>
      </div>
      {shown.length > 0 && (
        <div className="overflow-x-auto rounded border border-zinc-800">
          <table className="w-full text-left text-[12px]" data-testid="config-diff">
            <thead className="bg-zinc-900 text-[11px] tracking-wide text-zinc-500">
              <tr>
                <th className="px-3 py-1.5 font-medium uppercase">key</th>
                {runs.map((r, i) => (
                  <th key={r.id} className="px-3 py-1.5 font-mono font-medium" style={{ color: runColor(i) }}>
                    #{r.number}
                    {i === baselineIndex && <span className="ml-1 text-zinc-500">(baseline)</span>}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-800/80 font-mono">
              {shown.map((row) => (
                <tr key={row.path} className={row.same ? "text-zinc-500" : "text-zinc-200"}>
                  <td className="px-3 py-1 whitespace-nowrap">{row.path}</td>
                  {row.values.map((v, i) => {
                    const changed = !row.same && i !== baselineIndex && v !== row.values[baselineIndex];
                    return (
                      <td key={i} className={`max-w-80 px-3 py-1 break-all ${changed ? "bg-amber-950/40 text-amber-200" : ""}`}>
                        {v ?? <span className="text-zinc-600">(absent)</span>}
                      </td>
                    );
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
