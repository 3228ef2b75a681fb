"use client";
/**
 * The notebook page of one experiment: its files (the required four and lib/ helpers) in Monaco, Save,
 * Check, and Dry run / Train / Eval. The runner's diagnostics (a refused start or a Check) become markers at
 * their file and line, opening the file of the first error, and a clickable list under the editor; the
 * latest run's runtime errors are marked as warnings while the code is that run's code; an accepted start
 * opens the live run page. Save and Run send the version the editor's text is based on: when someone saved a
 * newer version meanwhile, the server refuses (stale tab) and the editor keeps the text and opens the diff
 * against that version. The header's menu renames, duplicates, archives and deletes the experiment, and
 * opens its version history (diff against any version, restore).
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import dynamic from "next/dynamic";
import { useRouter } from "next/navigation";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import type { Diagnostic, ExperimentFiles, RunKind } from "@contracts";
import { useTRPC } from "@/components/trpc";
import { useCanWrite } from "@/components/auth/use-role";
import { ExperimentMenu } from "../experiment-actions";
import { VersionHistory, type LoadedVersion } from "../version-history";
import { Button, ErrorBox, Spinner } from "@/components/ui/primitives";
import type { ReplaceRequest, RevealRequest } from "@/components/code/code-editor";
import { deleteFile, helperStub, renameFile } from "./file-ops";
import { FileTree } from "./file-tree";
import { ForkBanner, type StartFork } from "./fork-banner";
import { diagnosticFile, filePaths } from "@/components/code/files";
import type { MarkerCount } from "@/components/code/monaco-models";
import { ProblemsPanel } from "./problems-panel";
import { RecentRuns } from "./recent-runs";
import { runtimeDiagnostics, sameCode } from "./runtime-markers";
import { TaskImportDialog, type ImportedTasks } from "./task-import-dialog";
import { useTypeLibs } from "@/components/code/use-type-libs";

const CodeEditor = dynamic(() => import("@/components/code/code-editor"), {
  ssr: false,
  loading: () => <div className="p-4 text-zinc-500">Loading editor…</div>,
});

interface Doc {
  experimentId: string;
  /** Changes only when a different experiment (or version) is loaded into the editor. */
  loadKey: string;
  files: ExperimentFiles;
  /** The files as last saved: the baseline of the unsaved-changes markers. */
  saved: ExperimentFiles;
  versionNumber: number;
}

type Notice = { tone: "error" | "ok"; message: string; runId?: string };

function sameFiles(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

/** The server's stale-tab refusal (experiments.save / runs.start with an outdated baseVersion). */
const isConflict = (e: { data?: { code?: string } | null }) => e.data?.code === "CONFLICT";

/** tRPC's message, or the input issues it carries (`files.lib/x.ts: …`), which name the file. */
function errorText(e: { message: string; data?: { issues?: string[] | null } | null }): string {
  return e.data?.issues?.length ? e.data.issues.join("; ") : e.message;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

export function ExperimentEditor({ id }: { id: string }) {
  const trpc = useTRPC();
  const canWrite = useCanWrite();
  const router = useRouter();
  const queryClient = useQueryClient();
  const exp = useQuery(trpc.experiments.get.queryOptions({ id }));
  const typeLibs = useTypeLibs();
  const latest = useQuery(trpc.experiments.latestRuntimeErrors.queryOptions({ id }, { refetchInterval: 15_000 }));

  const [doc, setDoc] = useState<Doc | null>(null);
  const [active, setActive] = useState<string>("scenario.ts");
  const [diagnostics, setDiagnostics] = useState<Diagnostic[]>([]);
  const [notice, setNotice] = useState<Notice | null>(null);
  const [reveal, setReveal] = useState<RevealRequest | null>(null);
  const [counts, setCounts] = useState<Record<string, MarkerCount>>({});
  const [showRuntime, setShowRuntime] = useState(true);
  const [importing, setImporting] = useState(false);
  const [replace, setReplace] = useState<ReplaceRequest | null>(null);
  /** The version history dialog (a conflict opens it on the latest version). */
  const [history, setHistory] = useState<{ initialVersion?: number } | null>(null);
  /** A save or run refused because a newer version exists: the message, until the user resolves it. */
  const [conflict, setConflict] = useState<string | null>(null);

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

  // The runner's diagnostics describe the text it checked: once a file is edited, renamed or deleted,
  // its diagnostics would point at lines that moved, so they go (the next Check or run brings fresh ones).
  const dropDiagnostics = useCallback((file: string) => {
    setDiagnostics((ds) => (ds.some((d) => d.file === file) ? ds.filter((d) => d.file !== file) : ds));
  }, []);

  const onChange = useCallback(
    (file: string, value: string) => {
      setDoc((d) => (d && d.files[file] !== value ? { ...d, files: { ...d.files, [file]: value } } : d));
      dropDiagnostics(file);
    },
    [dropDiagnostics],
  );

  const createFile = (path: string) => {
    setDoc((d) => (d ? { ...d, files: { ...d.files, [path]: helperStub(path) } } : d));
    setActive(path);
  };
  const renameHelper = (from: string, to: string) => {
    setDoc((d) => (d ? { ...d, files: renameFile(d.files, from, to) } : d));
    dropDiagnostics(from);
    if (active === from) setActive(to);
  };
  const deleteHelper = (path: string) => {
    // Switch away first: the editor must not be showing a model when it is disposed.
    if (active === path) setActive("scenario.ts");
    setDoc((d) => (d ? { ...d, files: deleteFile(d.files, path) } : d));
    dropDiagnostics(path);
  };

  const importTasks = (t: ImportedTasks) => {
    setImporting(false);
    setActive("tasks.jsonl");
    setReplace({ file: "tasks.jsonl", text: t.text, nonce: Date.now() });
    const n = (x: number) => x.toLocaleString("en-US");
    setNotice({
      tone: "ok",
      message: `Imported ${n(t.rows)} tasks (${n(t.train)} train, ${n(t.val)} validation) from ${t.fileName} into tasks.jsonl: not saved yet; Ctrl/⌘+Z in the editor undoes it.`,
    });
  };

  // Never touches the buffers: the user's text stays; the history opens on the latest version to diff against.
  const openConflict = useCallback(
    (message: string) => {
      setConflict(message);
      void queryClient.invalidateQueries({ queryKey: trpc.experiments.pathKey() });
      setHistory({});
    },
    [queryClient, trpc],
  );

  const save = useMutation(
    trpc.experiments.save.mutationOptions({
      onSuccess: (res, input) => {
        setDoc((d) => (d ? { ...d, saved: input.files, versionNumber: res.number } : d));
        setConflict(null);
        void queryClient.invalidateQueries({ queryKey: trpc.experiments.pathKey() });
      },
      onError: (e) => {
        if (isConflict(e)) openConflict(e.message);
      },
    }),
  );

  /** Replace the editor's files with a version's (a restore, or "load the latest" after a conflict). */
  const loadVersion = useCallback((v: LoadedVersion) => {
    setDoc((d) => (d ? { ...d, loadKey: v.id, files: v.files, saved: v.files, versionNumber: v.number } : d));
    setActive((a) => (a in v.files ? a : "scenario.ts"));
    setDiagnostics([]);
    setConflict(null);
  }, []);
  const start = useMutation(trpc.runs.start.mutationOptions());
  const validate = useMutation(trpc.experiments.validate.mutationOptions());

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
    save.mutate({ id: doc.experimentId, files: doc.files, baseVersion: doc.versionNumber }, { onSettled: () => void (saving.current = false) });
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

  const check = useCallback(() => {
    if (!doc || validate.isPending) return;
    setNotice(null);
    const files = doc.files;
    validate.mutate(
      { files, kind: "dry-run" },
      {
        onSuccess: (res) => {
          if (res.diagnostics.length === 0) {
            setDiagnostics([]);
            setNotice({ tone: "ok", message: "Check passed: the runner accepts these files." });
            return;
          }
          setNotice({ tone: "error", message: `Check found ${plural(res.diagnostics.length, "problem")} (click one to jump to it).` });
          showDiagnostics(res.diagnostics, files);
        },
        onError: (e) => setNotice({ tone: "error", message: `Check failed: ${errorText(e)}` }),
      },
    );
  }, [doc, validate, showDiagnostics]);

  const run = useCallback(
    (kind: RunKind, fork?: StartFork) => {
      if (!doc || start.isPending) return;
      setNotice(null);
      const files = doc.files;
      start.mutate(
        { experimentId: doc.experimentId, files, kind, baseVersion: doc.versionNumber, ...(fork ? { fork } : {}) },
        {
          onSuccess: (res) => {
            void queryClient.invalidateQueries({ queryKey: trpc.experiments.pathKey() });
            void queryClient.invalidateQueries({ queryKey: trpc.runs.pathKey() });
            if (res.ok) {
              // Accepted: the server saved these exact files as the run's version. (A refused start saves nothing.)
              setDoc((d) => (d ? { ...d, saved: files, versionNumber: res.versionNumber } : d));
              setConflict(null);
              setDiagnostics([]);
              router.push(`/runs/${res.runId}`);
              return;
            }
            const runId = "runId" in res && typeof res.runId === "string" ? res.runId : undefined;
            const message =
              res.diagnostics.length > 0 ? `Run refused: ${plural(res.diagnostics.length, "problem")} to fix (click one to jump to it).` : `Run refused: ${res.error}`;
            setNotice({ tone: "error", message, runId });
            showDiagnostics(res.diagnostics, files);
          },
          onError: (e) => {
            if (isConflict(e)) openConflict(e.message);
            else setNotice({ tone: "error", message: errorText(e) });
          },
        },
      );
    },
    [doc, start, queryClient, trpc, router, showDiagnostics, openConflict],
  );

  const latestErrors = latest.data && latest.data.errors.length > 0 ? latest.data : null;
  const codeMatches = latestErrors !== null && doc !== null && sameCode(latestErrors.code, doc.files);
  const runtimeDiags = useMemo(() => (showRuntime && doc ? runtimeDiagnostics(latestErrors, doc.files) : []), [showRuntime, latestErrors, doc]);

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

  const busy = start.isPending ? "Checking and starting…" : validate.isPending ? "Checking…" : null;
  const pick = (d: Pick<Diagnostic, "file" | "line" | "column">) => {
    const file = diagnosticFile(d, doc.files);
    if (!file) return;
    setActive(file);
    setReveal({ file, line: d.line, column: d.column, nonce: Date.now() });
  };

  return (
    <div className="flex min-h-0 flex-1">
      <section className="flex min-w-0 flex-1 flex-col">
        <div className="flex h-11 shrink-0 items-center gap-3 border-b border-zinc-800 px-4">
          <h1 className="truncate text-[15px] font-semibold text-zinc-100">{exp.data.name}</h1>
          <button
            type="button"
            onClick={() => setHistory({})}
            title={`Based on version ${doc.versionNumber}: open the version history (who saved what, diff, restore)`}
            className="rounded px-1 font-mono text-[12px] text-zinc-500 hover:bg-zinc-800 hover:text-zinc-200"
          >
            v{doc.versionNumber}
          </button>
          {exp.data.archivedAt && (
            <span className="rounded border border-zinc-700 px-1.5 text-[11px] text-zinc-400" title="Hidden from the experiments list; its runs stay">
              archived
            </span>
          )}
          <ExperimentMenu
            experiment={{ id: exp.data.id, name: exp.data.name, archivedAt: exp.data.archivedAt }}
            onHistory={() => setHistory({})}
            onDeleted={() => router.push("/experiments")}
          />
          {dirty ? (
            <span data-testid="unsaved" className="flex items-center gap-1.5 text-[12px] text-amber-300">
              <span aria-hidden className="h-2 w-2 rounded-full bg-amber-400" />
              Unsaved changes
            </span>
          ) : save.isSuccess ? (
            <span className="text-[12px] text-zinc-500">Saved</span>
          ) : null}
          {!canWrite && (
            <span data-testid="read-only" className="ml-auto text-[12px] text-zinc-500">
              Read only: viewers cannot edit or run
            </span>
          )}
          {canWrite && <div className="ml-auto flex items-center gap-2">
            <Button onClick={onSave} disabled={!dirty || save.isPending} title="Save a new version (Ctrl/⌘+S)">
              {save.isPending ? "Saving…" : "Save"}
            </Button>
            <Button onClick={check} disabled={validate.isPending || start.isPending} title="Type-check the code and check config and tasks on the runner, without running">
              Check
            </Button>
            <span aria-hidden className="mx-1 h-5 w-px bg-zinc-800" />
            <Button onClick={() => run("dry-run")} disabled={!!busy} title="One step of rollouts, no training">
              Dry run
            </Button>
            <Button onClick={() => run("eval")} disabled={!!busy} title="Evaluate the base model on the validation tasks">
              Eval
            </Button>
            <Button variant="primary" onClick={() => run("train")} disabled={!!busy} title="Train with GRPO">
              Train
            </Button>
          </div>}
        </div>

        {conflict && !history && (
          <div role="alert" data-testid="conflict-banner" className="flex shrink-0 items-center gap-3 border-b border-amber-900 bg-amber-950/40 px-4 py-1.5 text-[12px] text-amber-100">
            <span className="min-w-0 flex-1">Not saved: {conflict}.</span>
            <Button onClick={() => setHistory({})}>Review changes</Button>
          </div>
        )}

        {canWrite && <ForkBanner busy={!!busy} onStart={run} />}

        <div className="flex min-h-0 flex-1">
          <FileTree
            files={doc.files}
            active={active}
            dirty={dirtyFiles}
            counts={counts}
            onOpen={setActive}
            onCreate={createFile}
            onRename={renameHelper}
            onDelete={deleteHelper}
            onImportTasks={() => setImporting(true)}
          />
          <div className="flex min-w-0 flex-1 flex-col">
            <div className="flex h-8 shrink-0 items-center gap-3 border-b border-zinc-800 px-3">
              <span className="truncate font-mono text-[12px] text-zinc-400" data-testid="active-file">
                {active}
              </span>
              {active === "tasks.jsonl" && (
                <Button variant="ghost" className="ml-auto" onClick={() => setImporting(true)} title="Replace tasks.jsonl with rows from a JSON Lines, JSON, CSV, TSV or Parquet file">
                  Import tasks…
                </Button>
              )}
            </div>
            {typeLibs.error && (
              <div role="alert" className="shrink-0 border-b border-amber-900 bg-amber-950/40 px-3 py-1 text-[12px] text-amber-200">
                The SDK&apos;s types could not be loaded ({typeLibs.error.message}): the editor cannot check uses of rollbook and zod. The runner still
                checks them on Check and Run.
              </div>
            )}
            <div className="relative min-h-0 flex-1">
              {typeLibs.data || typeLibs.error ? (
                <CodeEditor
                  typeLibs={typeLibs.data ?? []}
                  files={doc.files}
                  loadKey={doc.loadKey}
                  active={active}
                  onChange={onChange}
                  diagnostics={diagnostics}
                  runtimeDiagnostics={runtimeDiags}
                  onMarkerCounts={setCounts}
                  reveal={reveal}
                  replace={replace}
                  onSave={canWrite ? onSave : undefined}
                  readOnly={!canWrite}
                />
              ) : (
                <div className="p-4 text-zinc-500">Loading editor…</div>
              )}
            </div>
          </div>
        </div>

        <ProblemsPanel
          diagnostics={diagnostics}
          error={notice?.tone === "error" ? notice : null}
          ok={notice?.tone === "ok" ? notice.message : null}
          saveError={save.error && !isConflict(save.error) ? errorText(save.error) : null}
          busy={busy}
          runtime={latestErrors ? { latest: latestErrors, matches: codeMatches, show: showRuntime, onToggle: setShowRuntime } : null}
          onPick={pick}
        />
      </section>
      <RecentRuns experimentId={doc.experimentId} />
      {importing && <TaskImportDialog files={doc.files} onClose={() => setImporting(false)} onImport={importTasks} />}
      {history && (
        <VersionHistory
          experimentId={doc.experimentId}
          editorFiles={doc.files}
          baseVersion={doc.versionNumber}
          dirty={dirty}
          canWrite={canWrite}
          initialVersion={history.initialVersion}
          conflict={conflict}
          onClose={() => setHistory(null)}
          onRestored={(v) => {
            loadVersion(v);
            setHistory(null);
            setNotice({ tone: "ok", message: `Restored: version ${v.number} holds the restored files.` });
          }}
          onRebase={(v) => {
            // Keep the buffers; the next save is based on v (the unsaved markers now compare with it).
            setDoc((d) => (d ? { ...d, saved: v.files, versionNumber: v.number } : d));
            setConflict(null);
            setHistory(null);
          }}
          onLoad={(v) => {
            loadVersion(v);
            setHistory(null);
          }}
        />
      )}
    </div>
  );
}
