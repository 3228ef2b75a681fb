"use client";
/**
 * A run's tags and notes, edited in place (runs.update; members and up — viewers see them read-only).
 * Tags: × removes one, "+" opens a field where Enter adds (comma-separated adds several). Notes: a button
 * that opens a small editor; ⌘/Ctrl+Enter saves, Escape cancels. Rules (trimmed, deduplicated, 20 tags of
 * 40 characters, 10,000-character notes) are the server's, shown here as its error message.
 */
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { MAX_NOTES_CHARS } from "@/features/runs/runs-table-query";
import { useTRPC } from "@/components/trpc";
import { Button } from "@/components/ui/primitives";

function useUpdateRun() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  return useMutation(
    trpc.runs.update.mutationOptions({
      onSuccess: () =>
        Promise.all([
          qc.invalidateQueries({ queryKey: trpc.runs.list.pathKey() }),
          qc.invalidateQueries({ queryKey: trpc.runs.facets.pathKey() }),
          qc.invalidateQueries({ queryKey: trpc.runs.get.pathKey() }),
        ]),
    }),
  );
}

export function RunTags({ runId, tags, canEdit }: { runId: string; tags: string[]; canEdit: boolean }) {
  const update = useUpdateRun();
  const [adding, setAdding] = useState(false);
  const [text, setText] = useState("");
  // Set once the field is closing (Enter, Escape): the blur that follows must not add (again).
  const cancelled = useRef(false);
  const save = (next: string[]) => update.mutate({ id: runId, tags: next });
  const add = () => {
    if (cancelled.current) return;
    cancelled.current = true; // closing: a blur after Enter must not add it twice
    const more = text.split(",").map((t) => t.trim()).filter(Boolean);
    if (more.length > 0) save([...tags, ...more]);
    setText("");
    setAdding(false);
  };
  return (
    <div className="flex max-w-72 flex-wrap items-center gap-1" data-no-row-click data-testid="run-tags">
      {tags.map((t) => (
        <span key={t} className="inline-flex items-center gap-0.5 rounded bg-zinc-800 px-1.5 py-0.5 text-[11px] text-zinc-300 ring-1 ring-zinc-700 ring-inset">
          {t}
          {canEdit && (
            <button type="button" aria-label={`Remove tag ${t}`} className="text-zinc-500 hover:text-red-300" onClick={() => save(tags.filter((x) => x !== t))}>
              ×
            </button>
          )}
        </span>
      ))}
      {canEdit &&
        (adding ? (
          <input
            autoFocus
            aria-label="New tag"
            data-testid="run-tag-input"
            value={text}
            maxLength={200}
            onChange={(e) => setText(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === "Enter") add();
              if (e.key === "Escape") {
                cancelled.current = true;
                setText("");
                setAdding(false);
              }
            }}
            onBlur={add}
            className="h-5 w-24 rounded border border-zinc-600 bg-zinc-900 px-1 text-[11px] text-zinc-100"
          />
        ) : (
          <button
            type="button"
            aria-label="Add tag"
            data-testid="run-tag-add"
            className="rounded px-1 text-[11px] text-zinc-500 ring-1 ring-zinc-700 ring-inset hover:text-zinc-200"
            onClick={() => {
              cancelled.current = false;
              setAdding(true);
            }}
          >
            +
          </button>
        ))}
      {update.error && (
        <span role="alert" className="w-full text-[11px] text-red-300">
          {update.error.message}
        </span>
      )}
    </div>
  );
}

export function RunNotes({ runId, notes, canEdit }: { runId: string; notes: string; canEdit: boolean }) {
  const update = useUpdateRun();
  const [open, setOpen] = useState(false);
  const [text, setText] = useState(notes);
  if (!canEdit && !notes) return null;
  const close = () => {
    setOpen(false);
    update.reset();
  };
  return (
    <span className="relative inline-block" data-no-row-click>
      <button
        type="button"
        data-testid="run-notes-button"
        title={notes || "Add a note"}
        aria-label={notes ? "Notes" : "Add a note"}
        className={`rounded px-1 text-[11px] whitespace-nowrap ring-1 ring-inset ${notes ? "text-amber-200 ring-amber-700/60" : "text-zinc-500 ring-zinc-700 hover:text-zinc-200"}`}
        onClick={() => {
          setText(notes);
          setOpen((o) => !o);
        }}
      >
        {notes ? "note" : "+ note"}
      </button>
      {open && (
        <div className="absolute top-6 left-0 z-20 w-80 rounded border border-zinc-700 bg-zinc-900 p-2 shadow-xl" role="dialog" aria-label="Run notes">
          {canEdit ? (
            <>
              <textarea
                autoFocus
                data-testid="run-notes-input"
                value={text}
                maxLength={MAX_NOTES_CHARS}
                rows={5}
                onChange={(e) => setText(e.target.value)}
                onKeyDown={(e) => {
                  if (e.key === "Escape") close();
                  if (e.key === "Enter" && (e.metaKey || e.ctrlKey)) update.mutate({ id: runId, notes: text }, { onSuccess: close });
                }}
                className="w-full resize-y rounded border border-zinc-700 bg-zinc-950 p-1.5 text-[12px] text-zinc-100"
              />
              <div className="mt-1 flex items-center gap-2">
                <span className="text-[11px] text-zinc-500">
                  {text.length.toLocaleString()} / {MAX_NOTES_CHARS.toLocaleString()}
                </span>
                <Button className="ml-auto" variant="ghost" onClick={close}>
                  Cancel
                </Button>
                <Button variant="primary" disabled={update.isPending} onClick={() => update.mutate({ id: runId, notes: text }, { onSuccess: close })}>
                  Save
                </Button>
              </div>
              {update.error && (
                <div role="alert" className="mt-1 text-[11px] text-red-300">
                  {update.error.message}
                </div>
              )}
            </>
          ) : (
            <p className="text-[12px] whitespace-pre-wrap text-zinc-200">{notes}</p>
          )}
        </div>
      )}
    </span>
  );
}
