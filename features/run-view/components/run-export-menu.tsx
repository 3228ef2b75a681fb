"use client";
/**
 * The run page's Export menu: plain links to the export routes (features/runs/server/export-http.ts), so the browser
 * downloads them with its session cookie, streaming — a big run's trajectories never pass through React.
 */
import { useState } from "react";
import { Button } from "@/components/ui/primitives";

const itemClass = "block rounded px-2 py-1.5 text-[13px] text-zinc-200 hover:bg-zinc-800";

export function RunExportMenu({ runId }: { runId: string }) {
  const [open, setOpen] = useState(false);
  const base = `/api/export/runs/${encodeURIComponent(runId)}`;
  return (
    <span className="relative" onBlur={(e) => !e.currentTarget.contains(e.relatedTarget) && setOpen(false)}>
      <Button variant="ghost" aria-haspopup="menu" aria-expanded={open} data-testid="run-export" onClick={() => setOpen((o) => !o)}>
        Export ▾
      </Button>
      {open && (
        <div role="menu" className="absolute top-8 right-0 z-30 w-72 rounded border border-zinc-700 bg-zinc-900 p-1 shadow-xl">
          <a role="menuitem" className={itemClass} href={`${base}/metrics`} download onClick={() => setOpen(false)}>
            Step metrics <span className="text-zinc-500">CSV, a row per step</span>
          </a>
          <a role="menuitem" className={itemClass} href={`${base}/trajectories`} download onClick={() => setOpen(false)}>
            Trajectories <span className="text-zinc-500">JSONL, a rollout per line</span>
          </a>
          <a role="menuitem" className={itemClass} href={`${base}/trajectories?tokens=1`} download onClick={() => setOpen(false)}>
            Trajectories + token ids &amp; logprobs <span className="text-zinc-500">JSONL</span>
          </a>
          <a role="menuitem" className={itemClass} href={`${base}/checkpoints`} download onClick={() => setOpen(false)}>
            Checkpoints <span className="text-zinc-500">JSON, the best one named</span>
          </a>
        </div>
      )}
    </span>
  );
}
