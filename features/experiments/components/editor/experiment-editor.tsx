"use client";
/**
 * The notebook page of one experiment: its files (the required four and lib/ helpers) in Monaco, Save,
 * Check, and Dry run / Train / Eval. The runner's diagnostics (a refused start or a Check) become markers at
 * their file and line, opening the file of the first error, and a clickable list under the editor; the
 * latest run's runtime errors are marked as warnings while the code is that run's code; an accepted start
 * opens the live run page. Save and Run send the version the editor's text is based on: when someone saved a
 * newer version meanwhile, the server refuses (stale tab) and the editor keeps the text and opens the diff
 * against that version. The header's menu renames, duplicates, archives and deletes the experiment, and
 * opens its version history (diff against any version, restore). The state lives in hooks beside this file, one
 * job each (the document: use-experiment-document.ts); this file is the layout.
 */
import dynamic from "next/dynamic";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { useCan } from "@/components/auth/use-role";
import { ExperimentMenu } from "../experiment-actions";
import { VersionHistory } from "../version-history";
import { Button, ErrorBox, Spinner } from "@/components/ui/primitives";
import type { MarkerCount } from "@/components/code/monaco-models";
import { FileTree } from "./file-tree";
import { ForkBanner } from "./fork-banner";
import { ProblemsPanel } from "./problems-panel";
import { RecentRuns } from "./recent-runs";
import { TaskImportDialog } from "./task-import-dialog";
import { useTypeLibs } from "@/components/code/use-type-libs";
import { useEditorNavigation } from "./use-editor-navigation";
import { useExperimentDocument } from "./use-experiment-document";
import { useRuntimeMarkers } from "./use-runtime-markers";
import { useSaveShortcut } from "./use-save-shortcut";
import { useTaskImport } from "./use-task-import";
import { useUnsavedGuard } from "./use-unsaved-guard";

const CodeEditor = dynamic(() => import("@/components/code/code-editor"), {
  ssr: false,
  loading: () => <div className="p-4 text-zinc-500">Loading editor…</div>,
});

const noSave = () => {};

export function ExperimentEditor({ id }: { id: string }) {
  // What the caller's role allows (contracts/actions.ts): a viewer gets a read-only editor with no run buttons.
  const canEdit = useCan("experiment.edit");
  const canRun = useCan("run.start");
  const canRestore = useCan("experiment.restoreVersion");
  const router = useRouter();
  const typeLibs = useTypeLibs();
  const nav = useEditorNavigation();
  const { active, setActive } = nav;
  const editor = useExperimentDocument(id, nav);
  const { exp, doc } = editor;
  const tasks = useTaskImport({ setActive, setNotice: editor.setNotice });
  const runtime = useRuntimeMarkers(id, doc?.files ?? null);
  const [counts, setCounts] = useState<Record<string, MarkerCount>>({});
  useUnsavedGuard(editor.dirty);
  // Ctrl/⌘+S too: a viewer's key press must not send a save the server refuses.
  useSaveShortcut(canEdit ? editor.onSave : noSave);

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

  return (
    <div className="flex min-h-0 flex-1">
      <section className="flex min-w-0 flex-1 flex-col">
        <div className="flex h-11 shrink-0 items-center gap-3 border-b border-zinc-800 px-4">
          <h1 className="truncate text-[15px] font-semibold text-zinc-100">{exp.data.name}</h1>
          <button
            type="button"
            onClick={editor.openHistory}
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
            onHistory={editor.openHistory}
            onDeleted={() => router.push("/experiments")}
          />
          {canEdit && editor.dirty ? (
            <span data-testid="unsaved" className="flex items-center gap-1.5 text-[12px] text-amber-300">
              <span aria-hidden className="h-2 w-2 rounded-full bg-amber-400" />
              Unsaved changes
            </span>
          ) : editor.saveSucceeded ? (
            <span className="text-[12px] text-zinc-500">Saved</span>
          ) : null}
          {!canEdit && !canRun && (
            <span data-testid="read-only" className="ml-auto text-[12px] text-zinc-500">
              Read only: viewers cannot edit or run
            </span>
          )}
          {(canEdit || canRun) && <div className="ml-auto flex items-center gap-2">
            {canEdit && (
              <>
                <Button onClick={editor.onSave} disabled={!editor.dirty || editor.savePending} title="Save a new version (Ctrl/⌘+S)">
                  {editor.savePending ? "Saving…" : "Save"}
                </Button>
                <Button onClick={editor.check} disabled={editor.validating || editor.starting} title="Type-check the code and check config and tasks on the runner, without running">
                  Check
                </Button>
              </>
            )}
            {canRun && <>
            <span aria-hidden className="mx-1 h-5 w-px bg-zinc-800" />
            <Button onClick={() => editor.run("dry-run")} disabled={!!editor.busy} title="One step of rollouts, no training">
              Dry run
            </Button>
            <Button onClick={() => editor.run("eval")} disabled={!!editor.busy} title="Evaluate the base model on the validation tasks">
              Eval
            </Button>
            <Button variant="primary" onClick={() => editor.run("train")} disabled={!!editor.busy} title="Train with GRPO">
              Train
            </Button>
            </>}
          </div>}
        </div>

        {editor.conflict && !editor.history && (
          <div role="alert" data-testid="conflict-banner" className="flex shrink-0 items-center gap-3 border-b border-amber-900 bg-amber-950/40 px-4 py-1.5 text-[12px] text-amber-100">
            <span className="min-w-0 flex-1">Not saved: {editor.conflict}.</span>
            <Button onClick={editor.openHistory}>Review changes</Button>
          </div>
        )}

        {canRun && <ForkBanner busy={!!editor.busy} onStart={editor.run} />}

        <div className="flex min-h-0 flex-1">
          <FileTree
            files={doc.files}
            active={active}
            dirty={editor.dirtyFiles}
            counts={counts}
            onOpen={setActive}
            onCreate={editor.createFile}
            onRename={editor.renameHelper}
            onDelete={editor.deleteHelper}
            onImportTasks={tasks.open}
            readOnly={!canEdit}
          />
          <div className="flex min-w-0 flex-1 flex-col">
            <div className="flex h-8 shrink-0 items-center gap-3 border-b border-zinc-800 px-3">
              <span className="truncate font-mono text-[12px] text-zinc-400" data-testid="active-file">
                {active}
              </span>
              {canEdit && active === "tasks.jsonl" && (
                <Button variant="ghost" className="ml-auto" onClick={tasks.open} title="Replace tasks.jsonl with rows from a JSON Lines, JSON, CSV, TSV or Parquet file">
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
                  onChange={editor.onChange}
                  diagnostics={editor.diagnostics}
                  runtimeDiagnostics={runtime.diagnostics}
                  onMarkerCounts={setCounts}
                  reveal={nav.reveal}
                  replace={tasks.replace}
                  onSave={canEdit ? editor.onSave : undefined}
                  readOnly={!canEdit}
                />
              ) : (
                <div className="p-4 text-zinc-500">Loading editor…</div>
              )}
            </div>
          </div>
        </div>

        <ProblemsPanel
          diagnostics={editor.diagnostics}
          error={editor.notice?.tone === "error" ? editor.notice : null}
          ok={editor.notice?.tone === "ok" ? editor.notice.message : null}
          saveError={editor.saveError}
          busy={editor.busy}
          runtime={runtime.latestErrors ? { latest: runtime.latestErrors, matches: runtime.codeMatches, show: runtime.show, onToggle: runtime.setShow } : null}
          onPick={editor.pick}
        />
      </section>
      <RecentRuns experimentId={doc.experimentId} />
      {canEdit && tasks.importing && <TaskImportDialog files={doc.files} onClose={tasks.close} onImport={tasks.importTasks} />}
      {editor.history && (
        <VersionHistory
          experimentId={doc.experimentId}
          editorFiles={doc.files}
          baseVersion={doc.versionNumber}
          dirty={editor.dirty}
          canRestore={canRestore}
          initialVersion={editor.history.initialVersion}
          conflict={editor.conflict}
          onClose={editor.closeHistory}
          onRestored={editor.onRestored}
          onRebase={editor.onRebase}
          onLoad={editor.onLoad}
        />
      )}
    </div>
  );
}
