"use client";
/**
 * The notebook page of one experiment: its four files in Monaco, Save, and Dry run / Train / Eval.
 * A start refused with diagnostics shows them as markers at their file and line (opening the file of the
 * first error) and as a clickable list under the editor; an accepted start opens the live run page.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import dynamic from "next/dynamic";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import type { Diagnostic, ExperimentFiles, RunKind } from "@contracts";
import { useTRPC } from "../trpc";
import { fmtAgo, fmtNum } from "../ui/format";
import { Button, ErrorBox, KindBadge, Spinner, StatusBadge } from "../ui/primitives";
import type { RevealRequest } from "./code-editor";
import { diagnosticFile, filePaths } from "./files";

const CodeEditor = dynamic(() => import("./code-editor"), {
  ssr: false,
  loading: () => <div className="p-4 text-zinc-500">Loading editor…</div>,
});

interface Doc {
  experimentId: string;
  /** Changes only when a different experiment (or version) is loaded into the editor. */
  loadKey: string;
  files: ExperimentFiles;
  /** The files as last saved: the baseline of the unsaved-changes indicator. */
  saved: ExperimentFiles;
  versionNumber: number;
}

const ACTIVE_STATUSES = new Set(["queued", "running"]);

function sameFiles(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

export function ExperimentEditor({ id, sdkTypes }: { id: string; sdkTypes: string }) {
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const exp = useQuery(trpc.experiments.get.queryOptions({ id }));

  const [doc, setDoc] = useState<Doc | null>(null);
  const [active, setActive] = useState<string>("scenario.ts");
  const [diagnostics, setDiagnostics] = useState<Diagnostic[]>([]);
  const [startError, setStartError] = useState<{ message: string; runId?: string } | null>(null);
  const [reveal, setReveal] = useState<RevealRequest | null>(null);

  // Adopt the server's files when an experiment is first loaded (not on refetches: they would clobber edits).
  if (exp.data && doc?.experimentId !== exp.data.id) {
    const v = exp.data.version;
    setDoc({ experimentId: exp.data.id, loadKey: v.id, files: v.files, saved: v.files, versionNumber: v.number });
  }

  // A run start saves the files as a version on the server: pick up its number once the refetch lands.
  if (exp.data && doc && doc.experimentId === exp.data.id && exp.data.version.number !== doc.versionNumber) {
    const v = exp.data.version;
    if (sameFiles(v.files, doc.saved)) setDoc({ ...doc, versionNumber: v.number });
  }

  const dirtyFiles = useMemo(
    () => new Set(doc ? filePaths({ ...doc.saved, ...doc.files }).filter((n) => doc.files[n] !== doc.saved[n]) : []),
    [doc],
  );
  const dirty = dirtyFiles.size > 0;

  // Closing the tab with unsaved edits asks first.
  useEffect(() => {
    if (!dirty) return;
    const onBeforeUnload = (e: BeforeUnloadEvent) => e.preventDefault();
    window.addEventListener("beforeunload", onBeforeUnload);
    return () => window.removeEventListener("beforeunload", onBeforeUnload);
  }, [dirty]);

  const onChange = useCallback((file: string, value: string) => {
    setDoc((d) => (d && d.files[file] !== value ? { ...d, files: { ...d.files, [file]: value } } : d));
  }, []);

  const save = useMutation(
    trpc.experiments.save.mutationOptions({
      onSuccess: (res, input) => {
        setDoc((d) => (d ? { ...d, saved: input.files, versionNumber: res.number } : d));
        void queryClient.invalidateQueries({ queryKey: trpc.experiments.pathKey() });
      },
    }),
  );

  const start = useMutation(trpc.runs.start.mutationOptions());

  const showDiagnostics = useCallback((diags: Diagnostic[], files: ExperimentFiles) => {
    setDiagnostics(diags);
    const first = diags.find((d) => d.severity !== "warning") ?? diags[0];
    const file = first ? diagnosticFile(first, files) : null;
    if (first && file) {
      setActive(file);
      setReveal({ file, line: first.line, column: first.column, nonce: Date.now() });
    }
  }, []);

  // Set synchronously: Monaco's Ctrl+S binding and the page's can both fire for one key press.
  const saving = useRef(false);
  const onSave = useCallback(() => {
    if (!doc || saving.current) return;
    saving.current = true;
    save.mutate({ id: doc.experimentId, files: doc.files }, { onSettled: () => void (saving.current = false) });
  }, [doc, save]);

  // Ctrl/⌘+S saves from anywhere on the page (Monaco has its own binding while it has focus).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "s") {
        e.preventDefault();
        onSave();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onSave]);

  const run = useCallback(
    (kind: RunKind) => {
      if (!doc || start.isPending) return;
      setStartError(null);
      const files = doc.files;
      start.mutate(
        { experimentId: doc.experimentId, files, kind },
        {
          onSuccess: (res) => {
            // The server saved these exact files as a version before starting.
            setDoc((d) => (d ? { ...d, saved: files } : d));
            void queryClient.invalidateQueries({ queryKey: trpc.experiments.pathKey() });
            void queryClient.invalidateQueries({ queryKey: trpc.runs.pathKey() });
            if (res.ok) {
              setDiagnostics([]);
              router.push(`/runs/${res.runId}`);
              return;
            }
            const runId = "runId" in res && typeof res.runId === "string" ? res.runId : undefined;
            setStartError({ message: res.error, runId });
            showDiagnostics(res.diagnostics, files);
          },
          onError: (e) => setStartError({ message: e.message }),
        },
      );
    },
    [doc, start, queryClient, trpc, router, showDiagnostics],
  );

  if (exp.error) {
    return (
      <div className="p-6">
        <ErrorBox title="Could not load the experiment">{exp.error.message}</ErrorBox>
      </div>
    );
  }
  if (!exp.data || !doc) {
    return (
      <div className="p-6">
        <Spinner label="Loading experiment…" />
      </div>
    );
  }

  const errorCounts = new Map<string, number>();
  for (const d of diagnostics) {
    const f = diagnosticFile(d, doc.files);
    if (f) errorCounts.set(f, (errorCounts.get(f) ?? 0) + 1);
  }
  const busy = start.isPending;

  return (
    <div className="flex min-h-0 flex-1">
      <section className="flex min-w-0 flex-1 flex-col">
        <div className="flex h-11 shrink-0 items-center gap-3 border-b border-zinc-800 px-4">
          <h1 className="truncate text-[15px] font-semibold text-zinc-100">{exp.data.name}</h1>
          <span className="font-mono text-[12px] text-zinc-500">v{doc.versionNumber}</span>
          {dirty ? (
            <span data-testid="unsaved" className="flex items-center gap-1.5 text-[12px] text-amber-300">
              <span aria-hidden className="h-2 w-2 rounded-full bg-amber-400" />
              Unsaved changes
            </span>
          ) : save.isSuccess ? (
            <span className="text-[12px] text-zinc-500">Saved</span>
          ) : null}
          <div className="ml-auto flex items-center gap-2">
            <Button onClick={onSave} disabled={!dirty || save.isPending} title="Save a new version (Ctrl/⌘+S)">
              {save.isPending ? "Saving…" : "Save"}
            </Button>
            <span aria-hidden className="mx-1 h-5 w-px bg-zinc-800" />
            <Button onClick={() => run("dry-run")} disabled={busy} title="One step of rollouts, no training">
              Dry run
            </Button>
            <Button onClick={() => run("eval")} disabled={busy} title="Evaluate the base model on the validation tasks">
              Eval
            </Button>
            <Button variant="primary" onClick={() => run("train")} disabled={busy} title="Train with GRPO">
              Train
            </Button>
          </div>
        </div>

        <div className="flex shrink-0 items-end border-b border-zinc-800 bg-zinc-900/40 px-2" role="tablist" aria-label="Files">
          {filePaths(doc.files).map((name) => {
            const errors = errorCounts.get(name) ?? 0;
            const selected = name === active;
            return (
              <button
                key={name}
                type="button"
                role="tab"
                aria-selected={selected}
                onClick={() => setActive(name)}
                className={`-mb-px flex items-center gap-1.5 border-b-2 px-3 py-1.5 font-mono text-[12px] ${
                  selected ? "border-amber-400 bg-zinc-950 text-zinc-100" : "border-transparent text-zinc-400 hover:text-zinc-200"
                }`}
              >
                {name}
                {dirtyFiles.has(name) && <span title="unsaved" aria-label="unsaved" className="h-1.5 w-1.5 rounded-full bg-amber-400" />}
                {errors > 0 && (
                  <span className="rounded bg-red-900/80 px-1 text-[10px] text-red-200" aria-label={`${errors} problems`}>
                    {errors}
                  </span>
                )}
              </button>
            );
          })}
        </div>

        <div className="relative min-h-0 flex-1">
          <CodeEditor
            sdkTypes={sdkTypes}
            files={doc.files}
            loadKey={doc.loadKey}
            active={active}
            onChange={onChange}
            diagnostics={diagnostics}
            reveal={reveal}
            onSave={onSave}
          />
        </div>

        <ProblemsPanel
          diagnostics={diagnostics}
          error={startError}
          saveError={save.error?.message ?? null}
          busy={busy}
          onPick={(d) => {
            const file = diagnosticFile(d, doc.files);
            if (!file) return;
            setActive(file);
            setReveal({ file, line: d.line, column: d.column, nonce: Date.now() });
          }}
        />
      </section>
      <RecentRuns experimentId={doc.experimentId} />
    </div>
  );
}

function ProblemsPanel({
  diagnostics,
  error,
  saveError,
  busy,
  onPick,
}: {
  diagnostics: Diagnostic[];
  error: { message: string; runId?: string } | null;
  saveError: string | null;
  busy: boolean;
  onPick: (d: Diagnostic) => void;
}) {
  const empty = diagnostics.length === 0 && !error && !saveError && !busy;
  return (
    <div className="flex max-h-56 shrink-0 flex-col border-t border-zinc-800 bg-zinc-900/50">
      <div className="flex h-7 shrink-0 items-center gap-2 px-3 text-[11px] tracking-wide text-zinc-500 uppercase">
        Problems
        {diagnostics.length > 0 && <span className="rounded bg-red-900/80 px-1 text-red-200 normal-case">{diagnostics.length}</span>}
        {busy && <Spinner label="Checking and starting…" />}
      </div>
      {!empty && (
        <div className="min-h-0 overflow-auto px-3 pb-2" data-testid="problems">
          {saveError && <div className="mb-1 text-red-300">Save failed: {saveError}</div>}
          {error && (
            <div className="mb-1 text-red-300">
              Run refused: {diagnostics.length > 0 ? `${diagnostics.length} problem${diagnostics.length === 1 ? "" : "s"} to fix (click one to jump to it)` : error.message}
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
                  <span className="shrink-0 font-mono text-[12px] text-zinc-400">
                    {d.file}:{d.line}:{d.column}
                  </span>
                  <span className="min-w-0 text-zinc-200">{d.message}</span>
                </button>
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}

function RecentRuns({ experimentId }: { experimentId: string }) {
  const trpc = useTRPC();
  const runs = useQuery(
    trpc.runs.list.queryOptions(
      { experimentId, limit: 15 },
      { refetchInterval: (q) => (q.state.data?.items.some((r) => ACTIVE_STATUSES.has(r.status)) ? 2_000 : 15_000) },
    ),
  );
  return (
    <aside className="hidden w-72 shrink-0 flex-col border-l border-zinc-800 lg:flex">
      <div className="flex h-11 shrink-0 items-center justify-between border-b border-zinc-800 px-3">
        <span className="text-[11px] tracking-wide text-zinc-500 uppercase">Recent runs</span>
        <Link href={`/runs?experiment=${experimentId}`} className="text-[12px] text-zinc-400 hover:text-zinc-200">
          all →
        </Link>
      </div>
      <div className="min-h-0 flex-1 overflow-auto">
        {runs.error ? (
          <div className="p-3 text-[12px] text-red-300">{runs.error.message}</div>
        ) : !runs.data ? (
          <div className="p-3">
            <Spinner />
          </div>
        ) : runs.data.items.length === 0 ? (
          <div className="p-3 text-[12px] text-zinc-500">No runs yet. Try a dry run: one step of rollouts, no training.</div>
        ) : (
          <ul className="divide-y divide-zinc-800/70">
            {runs.data.items.map((r) => (
              <li key={r.id}>
                <Link href={`/runs/${r.id}`} className="flex flex-col gap-1 px-3 py-2 hover:bg-zinc-900">
                  <div className="flex items-center gap-2">
                    <span className="font-mono text-zinc-300">#{r.number}</span>
                    <KindBadge kind={r.kind} />
                    <span className="ml-auto">
                      <StatusBadge status={r.status} />
                    </span>
                  </div>
                  <div className="flex gap-3 text-[11px] text-zinc-500">
                    <span>reward {fmtNum(r.rewardMean)}</span>
                    <span>{r.rolloutCount} rollouts</span>
                    <span className="ml-auto">{fmtAgo(r.createdAt)}</span>
                  </div>
                </Link>
              </li>
            ))}
          </ul>
        )}
      </div>
    </aside>
  );
}
