"use client";
/**
 * The experiment's document and its state machine: the files as edited and as saved, the version they are
 * based on, Save / Check / Run and what they answer (the runner's diagnostics, a notice), and a stale tab.
 * Save and Run send the version the text is based on: when someone saved a newer version meanwhile the
 * server refuses (CONFLICT), the text stays, and the version history opens on the latest version, where
 * the user restores, loads it, or rebases onto it (keeping the text).
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useCallback, useMemo, useRef, useState } from "react";
import type { Diagnostic, ExperimentFiles, RunKind } from "@contracts";
import { useTRPC } from "@/components/trpc";
import { diagnosticFile } from "@/components/code/files";
import type { LoadedVersion } from "../version-history";
import { dirtyPaths, editFile, loadVersion as loadVersionInto, mapFiles, markSaved, reconcileDoc, type Doc } from "./document-state";
import { checkNotice, errorText, isConflict, refusedNotice, restoredNotice, type Notice } from "./editor-notices";
import { deleteFile, helperStub, renameFile } from "./file-ops";
import type { StartFork } from "./fork-banner";
import type { EditorNavigation } from "./use-editor-navigation";

export function useExperimentDocument(id: string, { active, setActive, revealAt }: Pick<EditorNavigation, "active" | "setActive" | "revealAt">) {
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const exp = useQuery(trpc.experiments.get.queryOptions({ id }));

  const [doc, setDoc] = useState<Doc | null>(null);
  const [diagnostics, setDiagnostics] = useState<Diagnostic[]>([]);
  const [notice, setNotice] = useState<Notice | null>(null);
  /** The version history dialog (a conflict opens it on the latest version). */
  const [history, setHistory] = useState<{ initialVersion?: number } | null>(null);
  /** A save or run refused because a newer version exists: the message, until the user resolves it. */
  const [conflict, setConflict] = useState<string | null>(null);

  // Adjusted while rendering: the first load adopts the server's files, a run start's version number is picked up.
  const reconciled = reconcileDoc(doc, exp.data);
  if (reconciled !== doc) setDoc(reconciled);

  const dirtyFiles = useMemo(() => dirtyPaths(doc), [doc]);
  const dirty = dirtyFiles.size > 0;

  // The runner's diagnostics describe the text it checked: once a file is edited, renamed or deleted,
  // its diagnostics would point at lines that moved, so they go (the next Check or run brings fresh ones).
  const dropDiagnostics = useCallback((file: string) => {
    setDiagnostics((ds) => (ds.some((d) => d.file === file) ? ds.filter((d) => d.file !== file) : ds));
  }, []);

  const onChange = useCallback(
    (file: string, value: string) => {
      setDoc((d) => editFile(d, file, value));
      dropDiagnostics(file);
    },
    [dropDiagnostics],
  );

  const createFile = (path: string) => {
    setDoc((d) => mapFiles(d, (files) => ({ ...files, [path]: helperStub(path) })));
    setActive(path);
  };
  const renameHelper = (from: string, to: string) => {
    setDoc((d) => mapFiles(d, (files) => renameFile(files, from, to)));
    dropDiagnostics(from);
    if (active === from) setActive(to);
  };
  const deleteHelper = (path: string) => {
    // Switch away first: the editor must not be showing a model when it is disposed.
    if (active === path) setActive("scenario.ts");
    setDoc((d) => mapFiles(d, (files) => deleteFile(files, path)));
    dropDiagnostics(path);
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
        setDoc((d) => markSaved(d, input.files, res.number));
        setConflict(null);
        void queryClient.invalidateQueries({ queryKey: trpc.experiments.pathKey() });
      },
      onError: (e) => {
        if (isConflict(e)) openConflict(e.message);
      },
    }),
  );

  /** Replace the editor's files with a version's (a restore, or "load the latest" after a conflict). */
  const loadVersion = useCallback(
    (v: LoadedVersion) => {
      setDoc((d) => loadVersionInto(d, v));
      setActive((a) => (a in v.files ? a : "scenario.ts"));
      setDiagnostics([]);
      setConflict(null);
    },
    [setActive],
  );
  const start = useMutation(trpc.runs.start.mutationOptions());
  const validate = useMutation(trpc.experiments.validate.mutationOptions());

  const showDiagnostics = useCallback(
    (diags: Diagnostic[], files: ExperimentFiles) => {
      setDiagnostics(diags);
      const first = diags.find((d) => d.severity !== "warning") ?? diags[0];
      const file = first ? diagnosticFile(first, files) : null;
      if (first && file) revealAt(file, first.line, first.column);
    },
    [revealAt],
  );

  // Set synchronously: Monaco's Ctrl+S binding and the page's can both fire for one key press.
  const saving = useRef(false);
  const onSave = useCallback(() => {
    if (!doc || saving.current) return;
    saving.current = true;
    save.mutate({ id: doc.experimentId, files: doc.files, baseVersion: doc.versionNumber }, { onSettled: () => void (saving.current = false) });
  }, [doc, save]);

  const check = useCallback(() => {
    if (!doc || validate.isPending) return;
    setNotice(null);
    const files = doc.files;
    validate.mutate(
      { files, kind: "dry-run" },
      {
        onSuccess: (res) => {
          setNotice(checkNotice(res.diagnostics.length));
          if (res.diagnostics.length === 0) setDiagnostics([]);
          else showDiagnostics(res.diagnostics, files);
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
              setDoc((d) => markSaved(d, files, res.versionNumber));
              setConflict(null);
              setDiagnostics([]);
              router.push(`/runs/${res.runId}`);
              return;
            }
            setNotice(refusedNotice(res));
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

  /** A problem picked in the list: open its file at its line. */
  const pick = (d: Pick<Diagnostic, "file" | "line" | "column">) => {
    const file = doc ? diagnosticFile(d, doc.files) : null;
    if (file) revealAt(file, d.line, d.column);
  };

  // The version history's ways out: each closes it.
  const closeHistory = () => setHistory(null);
  const onRestored = (v: LoadedVersion) => {
    loadVersion(v);
    setHistory(null);
    setNotice(restoredNotice(v.number));
  };
  const onRebase = (v: LoadedVersion) => {
    // Keep the buffers; the next save is based on v (the unsaved markers now compare with it).
    setDoc((d) => markSaved(d, v.files, v.number));
    setConflict(null);
    setHistory(null);
  };
  const onLoad = (v: LoadedVersion) => {
    loadVersion(v);
    setHistory(null);
  };

  return {
    exp,
    doc,
    dirtyFiles,
    dirty,
    diagnostics,
    notice,
    setNotice,
    conflict,
    history,
    openHistory: () => setHistory({}),
    closeHistory,
    onRestored,
    onRebase,
    onLoad,
    onChange,
    createFile,
    renameHelper,
    deleteHelper,
    pick,
    onSave,
    check,
    run,
    savePending: save.isPending,
    saveSucceeded: save.isSuccess,
    /** A failed save's reason (a conflict shows as the banner instead). */
    saveError: save.error && !isConflict(save.error) ? errorText(save.error) : null,
    validating: validate.isPending,
    starting: start.isPending,
    busy: start.isPending ? "Checking and starting…" : validate.isPending ? "Checking…" : null,
  };
}
