"use client";
/**
 * Import tasks…: pick a file (JSON Lines, JSON, CSV, TSV, Parquet), choose the train/validation split,
 * see the row count and the first rows, and replace tasks.jsonl — all or nothing. Before anything is
 * replaced the runner checks the candidate files (every row against the scenario's taskSchema); row
 * errors are listed, naming line and field and the row of the upload they came from, and nothing changes.
 */
import { useMutation } from "@tanstack/react-query";
import { useEffect, useMemo, useRef, useState } from "react";
import {
  applySplit,
  formatBytes,
  formatRowError,
  importTaskFile,
  TASK_FILE_EXTENSIONS,
  type Diagnostic,
  type ExperimentFiles,
  type ImportResult,
  type SplitSpec,
} from "@contracts";
import { useTRPC } from "@/components/trpc";
import { Button, Spinner } from "@/components/ui/primitives";
import { candidateTasks, defaultSplit, defaultSplitField, importVerdict, parseValValues, sourceOf } from "./task-import";
import { TaskRowsPreview } from "./task-rows-preview";

export interface ImportedTasks {
  text: string;
  fileName: string;
  rows: number;
  train: number;
  val: number;
}

type Picked = { name: string; size: number; result: ImportResult };

function ErrorList({ items }: { items: { key: string; text: string; source?: string | null }[] }) {
  return (
    <ul data-testid="import-errors" className="max-h-48 space-y-1 overflow-auto rounded border border-red-900 bg-red-950/40 p-2 font-mono text-[12px] text-red-200">
      {items.map((e) => (
        <li key={e.key} className="break-words whitespace-pre-wrap">
          {e.text}
          {e.source && <span className="text-red-300/70"> — {e.source}</span>}
        </li>
      ))}
    </ul>
  );
}

function SplitOptions({ columns, spec, onChange }: { columns: readonly string[]; spec: SplitSpec; onChange: (s: SplitSpec) => void }) {
  const [valText, setValText] = useState(spec.by === "field" ? (spec.valValues ?? []).join(", ") : "");
  const byField = spec.by === "field";
  return (
    <fieldset className="flex flex-col gap-2 text-[13px]">
      <legend className="mb-1 text-[12px] text-zinc-400">Train / validation split</legend>
      <label className="flex items-center gap-2">
        <input
          type="radio"
          name="split-by"
          checked={byField}
          disabled={columns.length === 0}
          onChange={() => onChange({ by: "field", field: defaultSplitField(columns), valValues: parseValValues(valText) })}
        />
        By a field
        <select
          aria-label="Split field"
          disabled={!byField}
          value={byField ? spec.field : ""}
          onChange={(e) => onChange({ by: "field", field: e.target.value, valValues: parseValValues(valText) })}
          className="rounded border border-zinc-700 bg-zinc-900 px-1.5 py-0.5 text-zinc-200 disabled:opacity-50"
        >
          {!byField && <option value="" />}
          {columns.map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
        </select>
        <input
          aria-label="Validation values"
          disabled={!byField}
          value={valText}
          placeholder="validation values (default: val, validation, dev, test, eval…)"
          onChange={(e) => {
            setValText(e.target.value);
            if (byField) onChange({ by: "field", field: spec.field, valValues: parseValValues(e.target.value) });
          }}
          className="min-w-0 flex-1 rounded border border-zinc-700 bg-zinc-950 px-1.5 py-0.5 font-mono text-[12px] text-zinc-200 disabled:opacity-50"
        />
      </label>
      <label className="flex items-center gap-2">
        <input type="radio" name="split-by" checked={!byField} onChange={() => onChange({ by: "ratio", val: 0.1, seed: 42 })} />
        By ratio
        <input
          aria-label="Validation percent"
          type="number"
          min={0}
          max={99}
          disabled={byField}
          value={spec.by === "ratio" ? Math.round(spec.val * 100) : 10}
          onChange={(e) => onChange({ by: "ratio", val: Math.min(99, Math.max(0, Number(e.target.value) || 0)) / 100, seed: spec.by === "ratio" ? spec.seed : 42 })}
          className="w-16 rounded border border-zinc-700 bg-zinc-950 px-1.5 py-0.5 text-zinc-200 disabled:opacity-50"
        />
        % validation, seed
        <input
          aria-label="Split seed"
          type="number"
          disabled={byField}
          value={spec.by === "ratio" ? spec.seed : 42}
          onChange={(e) => onChange({ by: "ratio", val: spec.by === "ratio" ? spec.val : 0.1, seed: Math.trunc(Number(e.target.value) || 0) })}
          className="w-20 rounded border border-zinc-700 bg-zinc-950 px-1.5 py-0.5 text-zinc-200 disabled:opacity-50"
        />
      </label>
    </fieldset>
  );
}

export function TaskImportDialog({ files, onClose, onImport }: { files: ExperimentFiles; onClose: () => void; onImport: (t: ImportedTasks) => void }) {
  const trpc = useTRPC();
  const dialogRef = useRef<HTMLDialogElement>(null);
  const [picked, setPicked] = useState<Picked | null>(null);
  const [reading, setReading] = useState(false);
  const [spec, setSpec] = useState<SplitSpec | null>(null);
  const validate = useMutation(trpc.experiments.validate.mutationOptions());

  // A modal <dialog>: focus stays inside, Escape closes it.
  useEffect(() => {
    const d = dialogRef.current;
    if (d && !d.open) d.showModal();
  }, []);

  const pick = async (file: File) => {
    setReading(true);
    validate.reset();
    try {
      const result = await importTaskFile({ name: file.name, bytes: new Uint8Array(await file.arrayBuffer()) });
      setPicked({ name: file.name, size: file.size, result });
      setSpec(result.ok ? defaultSplit(result.columns) : null);
    } finally {
      setReading(false);
    }
  };

  const imported = picked?.result.ok ? picked.result : null;
  const split = useMemo(() => (imported && spec ? applySplit(imported.rows, spec) : null), [imported, spec]);
  const candidate = useMemo(() => (split?.ok ? candidateTasks(split.rows) : null), [split]);

  const verdict = validate.data ? importVerdict(validate.data.diagnostics) : null;
  const confirm = () => {
    if (!candidate?.ok || !split?.ok || !picked) return;
    const text = candidate.text;
    validate.mutate(
      { files: { ...files, "tasks.jsonl": text }, kind: "train" },
      {
        onSuccess: (res) => {
          if (!importVerdict(res.diagnostics).ok) return;
          onImport({ text, fileName: picked.name, rows: split.rows.length, train: split.train, val: split.val });
        },
      },
    );
  };

  const diagItem = (d: Diagnostic, i: number) => ({
    key: `d${i}`,
    // Row errors already say "tasks.jsonl line 5, field …"; others get their position.
    text: d.message.startsWith(d.file) ? d.message : `${d.file}:${d.line}:${d.column} ${d.message}`,
    source: split?.ok && picked ? sourceOf(d, split.rows, picked.name) : null,
  });

  return (
    <dialog
      ref={dialogRef}
      onClose={onClose}
      aria-labelledby="import-title"
      data-testid="task-import"
      className="m-auto w-[min(56rem,calc(100vw-2rem))] rounded-lg border border-zinc-700 bg-zinc-900 p-0 text-zinc-200 shadow-2xl backdrop:bg-black/60"
    >
      <div className="flex flex-col gap-4 p-5">
        <div className="flex items-baseline gap-3">
          <h2 id="import-title" className="text-[15px] font-semibold text-zinc-100">
            Import tasks
          </h2>
          <span className="text-[12px] text-zinc-500">Replaces tasks.jsonl in the editor (unsaved until you save or run).</span>
          <button type="button" onClick={() => dialogRef.current?.close()} aria-label="Close" className="ml-auto rounded px-2 text-zinc-500 hover:bg-zinc-800 hover:text-zinc-200">
            ✕
          </button>
        </div>

        <label className="flex flex-col gap-1 text-[13px]">
          <span className="text-[12px] text-zinc-400">File: JSON Lines, JSON (an array of objects), CSV, TSV or Parquet; up to 50 MB</span>
          <input
            type="file"
            aria-label="Task file"
            accept={TASK_FILE_EXTENSIONS.join(",")}
            onChange={(e) => {
              const f = e.target.files?.[0];
              if (f) void pick(f);
            }}
            className="text-[12px] file:mr-3 file:rounded file:border file:border-zinc-700 file:bg-zinc-800 file:px-2.5 file:py-1 file:text-zinc-100"
          />
        </label>

        {reading && <Spinner label="Reading the file…" />}

        {picked && !picked.result.ok && (
          <div className="flex flex-col gap-1.5">
            <div className="text-[13px] text-red-300">
              {picked.name} cannot be imported ({picked.result.errorCount} problem{picked.result.errorCount === 1 ? "" : "s"}); nothing was changed.
            </div>
            <ErrorList items={picked.result.errors.map((e, i) => ({ key: `e${i}`, text: formatRowError(e, picked.name) }))} />
          </div>
        )}

        {imported && spec && picked && (
          <>
            <div className="text-[13px] text-zinc-300" data-testid="import-summary">
              {picked.name}: {imported.format.toUpperCase()}, {imported.rows.length.toLocaleString("en-US")} rows, {imported.columns.length} columns
              {split?.ok && (
                <span className="text-zinc-400">
                  {" "}
                  → {split.train.toLocaleString("en-US")} train, {split.val.toLocaleString("en-US")} validation
                  {candidate?.ok && `, ${formatBytes(candidate.bytes)} as tasks.jsonl`}
                </span>
              )}
            </div>
            <SplitOptions columns={imported.columns} spec={spec} onChange={(s) => (setSpec(s), validate.reset())} />
            {split && !split.ok && <ErrorList items={split.errors.map((e, i) => ({ key: `s${i}`, text: formatRowError(e, picked.name) }))} />}
            {candidate && !candidate.ok && <ErrorList items={[{ key: "size", text: candidate.message }]} />}
            <TaskRowsPreview rows={split?.ok ? split.rows : imported.rows} columns={imported.columns} total={imported.rows.length} />
          </>
        )}

        {validate.error && <div className="text-[13px] text-red-300">The runner could not check the rows: {validate.error.message}</div>}
        {verdict && !verdict.ok && (
          <div className="flex flex-col gap-1.5">
            <div className="text-[13px] text-red-300">
              {verdict.rows.length > 0
                ? "These rows do not fit the scenario's taskSchema; nothing was imported. Fix the file or the schema and try again."
                : "The experiment has problems, so the runner could not check the rows against taskSchema; nothing was imported. Fix these first:"}
            </div>
            <ErrorList items={[...[...verdict.rows].sort((a, b) => a.line - b.line), ...verdict.other].map(diagItem)} />
          </div>
        )}

        <div className="flex items-center justify-end gap-2">
          {validate.isPending && <Spinner label="Checking every row against taskSchema…" />}
          <Button onClick={() => dialogRef.current?.close()}>Cancel</Button>
          <Button variant="primary" disabled={!candidate?.ok || validate.isPending} onClick={confirm}>
            Check rows and replace tasks.jsonl
          </Button>
        </div>
      </div>
    </dialog>
  );
}
