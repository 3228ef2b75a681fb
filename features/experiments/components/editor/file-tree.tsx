"use client";
/**
 * The experiment's files beside the editor: the four required files first, then the helpers under lib/
 * (indented by folder). Each row shows unsaved changes and problem counts; helpers can be renamed and
 * deleted, the required files cannot. New file asks for a name and checks it with the contract's rule.
 */
import { useState, type ReactNode } from "react";
import { isRequiredFile } from "@contracts";
import { filePaths } from "@/components/code/files";
import { checkHelperPath, isHelperPath, normalizeHelperPath } from "./file-ops";
import type { MarkerCount } from "@/components/code/monaco-models";

export interface FileTreeProps {
  files: Record<string, string>;
  active: string;
  dirty: ReadonlySet<string>;
  counts: Readonly<Record<string, MarkerCount>>;
  onOpen: (path: string) => void;
  onCreate: (path: string) => void;
  onRename: (from: string, to: string) => void;
  onDelete: (path: string) => void;
  /** Import tasks… on the tasks.jsonl row. */
  onImportTasks?: () => void;
  readOnly?: boolean;
}

type Editing = { mode: "new" } | { mode: "rename"; path: string } | { mode: "delete"; path: string } | null;

const KIND_LABEL: Record<string, string> = { ts: "TS", json: "{}", jsonl: "≡" };

function FileKind({ path }: { path: string }) {
  const ext = path.split(".").pop() ?? "";
  return (
    <span aria-hidden className={`w-5 shrink-0 text-center font-mono text-[10px] ${ext === "ts" ? "text-sky-400" : "text-amber-300/80"}`}>
      {KIND_LABEL[ext] ?? "·"}
    </span>
  );
}

function Counts({ count }: { count: MarkerCount | undefined }) {
  if (!count || (count.errors === 0 && count.warnings === 0)) return null;
  return (
    <span className="flex shrink-0 items-center gap-1">
      {count.errors > 0 && (
        <span data-testid="file-errors" title={`${count.errors} error${count.errors === 1 ? "" : "s"}`} className="rounded bg-red-900/80 px-1 text-[10px] leading-4 text-red-100 tabular-nums">
          {count.errors}
        </span>
      )}
      {count.warnings > 0 && (
        <span title={`${count.warnings} warning${count.warnings === 1 ? "" : "s"}`} className="rounded bg-amber-900/70 px-1 text-[10px] leading-4 text-amber-100 tabular-nums">
          {count.warnings}
        </span>
      )}
    </span>
  );
}

/** A name field for New file and Rename: Enter confirms, Escape cancels, the rule broken is said inline. */
function NameInput({
  files,
  initial,
  renaming,
  label,
  onSubmit,
  onCancel,
}: {
  files: Record<string, string>;
  initial: string;
  renaming?: string;
  label: string;
  onSubmit: (path: string) => void;
  onCancel: () => void;
}) {
  const [value, setValue] = useState(initial);
  const [error, setError] = useState<string | null>(null);
  const submit = () => {
    const path = normalizeHelperPath(value);
    const problem = checkHelperPath(path, files, renaming);
    if (problem) setError(problem);
    else onSubmit(path);
  };
  return (
    <div className="px-2 py-1">
      <input
        autoFocus
        // Selected, so what the user types replaces the pre-filled "lib/" or old name (normalizeHelperPath
        // puts it back under lib/); typed after it instead, "lib/x.ts" is not doubled either.
        onFocus={(e) => e.currentTarget.select()}
        aria-label={label}
        aria-invalid={error !== null}
        value={value}
        placeholder="lib/name.ts"
        spellCheck={false}
        onChange={(e) => {
          setValue(e.target.value);
          setError(null);
        }}
        onKeyDown={(e) => {
          if (e.key === "Enter") submit();
          if (e.key === "Escape") onCancel();
        }}
        onBlur={() => (value.trim() === "" || value === initial) && onCancel()}
        className={`w-full rounded border bg-zinc-950 px-1.5 py-0.5 font-mono text-[12px] text-zinc-100 outline-none ${
          error ? "border-red-700" : "border-zinc-700 focus:border-amber-400/70"
        }`}
      />
      {error ? (
        <p role="alert" data-testid="file-name-error" className="mt-1 text-[11px] leading-snug text-red-300">
          {error}
        </p>
      ) : (
        <p className="mt-1 text-[11px] leading-snug text-zinc-500">Enter to {renaming ? "rename" : "create"}, Esc to cancel</p>
      )}
    </div>
  );
}

function RowButton({ label, onClick, children }: { label: string; onClick: () => void; children: ReactNode }) {
  return (
    <button
      type="button"
      aria-label={label}
      title={label}
      onClick={(e) => {
        e.stopPropagation();
        onClick();
      }}
      className="rounded px-1 text-[11px] text-zinc-500 hover:bg-zinc-700 hover:text-zinc-100"
    >
      {children}
    </button>
  );
}

export function FileTree(props: FileTreeProps) {
  const { files, active, dirty, counts, onOpen, onCreate, onRename, onDelete, onImportTasks, readOnly } = props;
  const [editing, setEditing] = useState<Editing>(null);
  const paths = filePaths(files);
  const required = paths.filter(isRequiredFile);
  const helpers = paths.filter((p) => !isRequiredFile(p));

  const row = (path: string) => {
    if (editing?.mode === "rename" && editing.path === path) {
      return (
        <li key={path}>
          <NameInput
            files={files}
            initial={path}
            renaming={path}
            label={`New name for ${path}`}
            onCancel={() => setEditing(null)}
            onSubmit={(to) => {
              setEditing(null);
              if (to !== path) onRename(path, to);
            }}
          />
        </li>
      );
    }
    if (editing?.mode === "delete" && editing.path === path) {
      return (
        <li key={path} className="mx-1 rounded bg-red-950/60 px-2 py-1.5 text-[12px] text-red-100" role="alertdialog" aria-label={`Delete ${path}?`}>
          Delete <span className="font-mono">{path}</span>?
          <div className="mt-1 flex gap-2">
            <button
              type="button"
              className="rounded bg-red-800 px-2 py-0.5 text-[12px] hover:bg-red-700"
              onClick={() => {
                setEditing(null);
                onDelete(path);
              }}
            >
              Delete
            </button>
            <button type="button" className="rounded px-2 py-0.5 text-[12px] text-zinc-300 hover:bg-zinc-800" onClick={() => setEditing(null)}>
              Cancel
            </button>
          </div>
        </li>
      );
    }
    const depth = path.split("/").length - 1;
    const name = depth === 0 ? path : path.slice(path.lastIndexOf("/") + 1);
    const selected = path === active;
    return (
      <li key={path} className="group relative">
        <button
          type="button"
          data-testid="file"
          data-path={path}
          aria-current={selected ? "true" : undefined}
          onClick={() => onOpen(path)}
          title={path}
          style={{ paddingLeft: 8 + depth * 12 }}
          className={`flex w-full items-center gap-1.5 py-1 pr-2 text-left text-[13px] ${
            selected ? "bg-zinc-800 text-zinc-50" : "text-zinc-300 hover:bg-zinc-800/50"
          }`}
        >
          <FileKind path={path} />
          <span className="min-w-0 flex-1 truncate font-mono text-[12px]">{name}</span>
          {dirty.has(path) && <span data-testid="file-unsaved" title="Unsaved changes" aria-label="unsaved" className="h-1.5 w-1.5 shrink-0 rounded-full bg-amber-400" />}
          <Counts count={counts[path]} />
        </button>
        {!readOnly && (isHelperPath(path) || (path === "tasks.jsonl" && onImportTasks)) && (
          <span className="absolute top-0.5 right-1 hidden items-center gap-0.5 rounded bg-zinc-900 shadow group-focus-within:flex group-hover:flex">
            {path === "tasks.jsonl" && onImportTasks && (
              <RowButton label="Import tasks into tasks.jsonl" onClick={onImportTasks}>
                Import…
              </RowButton>
            )}
            {isHelperPath(path) && (
              <>
                <RowButton label={`Rename ${path}`} onClick={() => setEditing({ mode: "rename", path })}>
                  Rename
                </RowButton>
                <RowButton label={`Delete ${path}`} onClick={() => setEditing({ mode: "delete", path })}>
                  Delete
                </RowButton>
              </>
            )}
          </span>
        )}
      </li>
    );
  };

  // lib/ and its folders as headings (once each; paths are sorted), so nested helpers read as a tree.
  const helperRows: ReactNode[] = [];
  const shownFolders = new Set<string>();
  for (const path of helpers) {
    const folders = path.split("/").slice(0, -1);
    folders.forEach((f, i) => {
      const prefix = folders.slice(0, i + 1).join("/");
      if (shownFolders.has(prefix)) return;
      shownFolders.add(prefix);
      helperRows.push(
        <li key={`dir:${prefix}`} style={{ paddingLeft: 8 + i * 12 }} className="flex items-center gap-1.5 py-1 font-mono text-[12px] text-zinc-500">
          <span aria-hidden className="w-5 text-center">▾</span>
          {f}/
        </li>,
      );
    });
    helperRows.push(row(path));
  }

  return (
    <nav aria-label="Files" className="flex w-56 shrink-0 flex-col border-r border-zinc-800 bg-zinc-900/30">
      <div className="flex h-8 shrink-0 items-center justify-between border-b border-zinc-800 pr-1 pl-3">
        <span className="text-[11px] tracking-wide text-zinc-500 uppercase">Files</span>
        {!readOnly && (
          <button
            type="button"
            onClick={() => setEditing({ mode: "new" })}
            title="New helper file under lib/"
            className="rounded px-1.5 py-0.5 text-[12px] text-zinc-300 hover:bg-zinc-800 hover:text-zinc-50"
          >
            + New file
          </button>
        )}
      </div>
      <ul className="min-h-0 flex-1 overflow-auto py-1">
        {required.map(row)}
        {helperRows}
        {editing?.mode === "new" && (
          <li>
            <NameInput
              files={files}
              initial="lib/"
              label="New file name"
              onCancel={() => setEditing(null)}
              onSubmit={(path) => {
                setEditing(null);
                onCreate(path);
              }}
            />
          </li>
        )}
      </ul>
    </nav>
  );
}
