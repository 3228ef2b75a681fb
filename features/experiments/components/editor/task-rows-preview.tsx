"use client";
/** The first rows of an import as a table, values as text, with the split each row will get. */
import type { ImportedRow, SplitRow } from "@contracts";
import { truncate } from "@/components/ui/format";

const SHOWN_ROWS = 5;
const SHOWN_COLUMNS = 8;

const cell = (v: unknown) => truncate(typeof v === "string" ? v : (JSON.stringify(v) ?? ""), 80);

export function TaskRowsPreview({ rows, columns, total }: { rows: readonly (ImportedRow | SplitRow)[]; columns: readonly string[]; total: number }) {
  const first = rows.slice(0, SHOWN_ROWS);
  // Columns the shown rows have (a split by the "split" column consumes it).
  const present = columns.filter((c) => first.some((r) => Object.hasOwn(r.data, c)));
  const cols = present.slice(0, SHOWN_COLUMNS);
  return (
    <div className="flex flex-col gap-1" data-testid="import-preview">
      <div className="text-[12px] text-zinc-500">
        First {first.length} of {total.toLocaleString("en-US")} rows{present.length > cols.length ? ` (${cols.length} of ${present.length} columns)` : ""}
      </div>
      <div className="max-h-56 overflow-auto rounded border border-zinc-800">
        <table className="w-full text-left text-[12px]">
          <thead className="sticky top-0 bg-zinc-900 text-[11px] text-zinc-500">
            <tr>
              <th className="px-2 py-1 font-medium">row</th>
              <th className="px-2 py-1 font-medium">split</th>
              {cols.map((c) => (
                <th key={c} className="px-2 py-1 font-mono font-medium">
                  {c}
                </th>
              ))}
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-800/70">
            {first.map((r) => (
              <tr key={r.row}>
                <td className="px-2 py-1 font-mono text-zinc-500 tabular-nums">{r.row}</td>
                <td className="px-2 py-1">
                  {"split" in r ? (
                    <span className={r.split === "val" ? "text-teal-300" : "text-zinc-300"}>{r.split === "val" ? "validation" : "train"}</span>
                  ) : (
                    <span className="text-zinc-600">—</span>
                  )}
                </td>
                {cols.map((c) => (
                  <td key={c} className="max-w-64 truncate px-2 py-1 font-mono text-zinc-200" title={cell(r.data[c])}>
                    {r.data[c] === undefined ? <span className="text-zinc-600">—</span> : cell(r.data[c])}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
