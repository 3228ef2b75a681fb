"use client";
/**
 * The Monaco editor over the experiment's files, one model each (file:///scenario.ts, file:///lib/…), all
 * kept alive whichever file is open, so the TS worker resolves `import { add } from "./lib/calc"` and
 * reports every file's problems. Markers: the runner's check (`diagnostics`), the latest run's runtime
 * errors (`runtimeDiagnostics`, warnings) and tasks.jsonl's lines. Client-only: load it with
 * next/dynamic({ ssr: false }).
 */
import Editor from "@monaco-editor/react";
import { useEffect, useRef, useState } from "react";
import type { Diagnostic, ExperimentFiles } from "@contracts";
import { setupMonaco, setTypeLibs, monaco, type TypeLib } from "./monaco-setup";
import { diagnosticFile, fileLanguage, filePaths, fileUri, jsonlDiagnostics } from "./files";
import { getModel, loadFiles, markerCounts, OWNER_CHECK, OWNER_JSONL, OWNER_RUNTIME, OWNER_TS, revalidateAll, setMarkers, syncModels, type MarkerCount } from "./monaco-models";

export interface RevealRequest {
  file: string;
  line: number;
  column: number;
  /** Changes on every request, so revealing the same place twice works. */
  nonce: number;
}

/** Replace a file's whole text as one undoable edit (an import): Ctrl/⌘+Z brings the old text back. */
export interface ReplaceRequest {
  file: string;
  text: string;
  nonce: number;
}

export interface CodeEditorProps {
  typeLibs: readonly TypeLib[];
  /** Contents to load into the models; they are (re)loaded whenever `loadKey` changes. */
  files: ExperimentFiles;
  loadKey: string;
  active: string;
  onChange: (file: string, value: string) => void;
  /** Problems from the runner's check (compile, config, tasks) at their file and line. */
  diagnostics: readonly Diagnostic[];
  /** The latest run's runtime errors at their frames (only passed while the code is that run's code). */
  runtimeDiagnostics: readonly Diagnostic[];
  /** Errors and warnings per file, whenever they change (the file list shows them). */
  onMarkerCounts?: (counts: Record<string, MarkerCount>) => void;
  reveal: RevealRequest | null;
  replace?: ReplaceRequest | null;
  onSave?: () => void;
  readOnly?: boolean;
}

function byFile(diagnostics: readonly Diagnostic[], paths: readonly string[]): Map<string, Diagnostic[]> {
  const known = Object.fromEntries(paths.map((p) => [p, ""]));
  const out = new Map<string, Diagnostic[]>(paths.map((p) => [p, []]));
  for (const d of diagnostics) {
    const file = diagnosticFile(d, known);
    if (file) out.get(file)!.push(d);
  }
  return out;
}

function reveal(editor: monaco.editor.IStandaloneCodeEditor, r: RevealRequest) {
  const position = { lineNumber: r.line, column: r.column };
  editor.setPosition(position);
  editor.revealPositionInCenter(position);
}

export default function CodeEditor(props: CodeEditorProps) {
  const { typeLibs, files, loadKey, active, onChange, diagnostics, runtimeDiagnostics, onMarkerCounts, onSave, readOnly = false } = props;
  // Configure Monaco, load the SDK's types and create the models before the editor mounts (idempotent).
  useState(() => {
    setupMonaco();
    setTypeLibs(typeLibs);
    loadFiles(files);
    return null;
  });
  useEffect(() => setTypeLibs(typeLibs), [typeLibs]);

  const editorRef = useRef<monaco.editor.IStandaloneCodeEditor | null>(null);
  const onChangeRef = useRef(onChange);
  const onSaveRef = useRef(onSave);
  const onCountsRef = useRef(onMarkerCounts);
  const filesRef = useRef(files);
  useEffect(() => {
    onChangeRef.current = onChange;
    onSaveRef.current = onSave;
    onCountsRef.current = onMarkerCounts;
    filesRef.current = files;
  });

  // Load a version's files into the models (a different experiment, or the saved version after a reload).
  useEffect(() => loadFiles(filesRef.current), [loadKey]);

  // Files added, renamed or deleted: models follow, and every model's edits are reported (not only the
  // visible one's: setValue above is filtered by comparison). Not re-run on every keystroke.
  const paths = filePaths(files);
  const pathsKey = paths.join("\n");
  const lastPathsKey = useRef(pathsKey);
  useEffect(() => {
    syncModels(filesRef.current);
    if (lastPathsKey.current !== pathsKey) {
      lastPathsKey.current = pathsKey;
      revalidateAll();
    }
    // tasks.jsonl may hold megabytes: its lines are re-parsed once typing pauses, not per keystroke.
    let jsonlTimer: ReturnType<typeof setTimeout> | undefined;
    const checkJsonl = (model: monaco.editor.ITextModel) => setMarkers(model, OWNER_JSONL, jsonlDiagnostics(model.getValue()));
    const subs = pathsKey.split("\n").map((name) => {
      const model = getModel(name);
      if (!model) return null;
      if (name === "tasks.jsonl") checkJsonl(model);
      return model.onDidChangeContent(() => {
        if (name === "tasks.jsonl") {
          clearTimeout(jsonlTimer);
          jsonlTimer = setTimeout(() => !model.isDisposed() && checkJsonl(model), 300);
        }
        onChangeRef.current(name, model.getValue());
      });
    });
    return () => {
      clearTimeout(jsonlTimer);
      subs.forEach((s) => s?.dispose());
    };
  }, [loadKey, pathsKey]);

  // The runner's diagnostics and the runtime warnings, per file; re-applied when the TS worker's markers
  // change, so that one the worker also reports is shown once.
  useEffect(() => {
    const names = pathsKey.split("\n");
    const check = byFile(diagnostics, names);
    const runtime = byFile(runtimeDiagnostics, names);
    const apply = () => {
      for (const name of names) {
        const model = getModel(name);
        if (!model) continue;
        setMarkers(model, OWNER_CHECK, check.get(name) ?? [], [OWNER_TS, OWNER_JSONL]);
        setMarkers(model, OWNER_RUNTIME, runtime.get(name) ?? []);
      }
    };
    apply();
    const sub = monaco.editor.onDidChangeMarkers(apply);
    return () => sub.dispose();
  }, [diagnostics, runtimeDiagnostics, pathsKey]);

  // Problem counts per file for the file list.
  useEffect(() => {
    let last = "";
    const report = () => {
      const counts = markerCounts();
      const key = JSON.stringify(counts);
      if (key !== last) {
        last = key;
        onCountsRef.current?.(counts);
      }
    };
    report();
    const sub = monaco.editor.onDidChangeMarkers(report);
    return () => sub.dispose();
  }, [pathsKey]);

  // Through the model, so the change is reported like typing (onChange) and sits on the undo stack.
  useEffect(() => {
    const r = props.replace;
    const model = r ? getModel(r.file) : null;
    if (!r || !model || model.getValue() === r.text) return;
    model.pushStackElement();
    model.pushEditOperations([], [{ range: model.getFullModelRange(), text: r.text }], () => null);
    model.pushStackElement();
  }, [props.replace]);

  useEffect(() => {
    const editor = editorRef.current;
    if (!editor || !props.reveal) return;
    const model = getModel(props.reveal.file);
    if (model && editor.getModel() !== model) editor.setModel(model);
    reveal(editor, props.reveal);
    editor.focus();
  }, [props.reveal]);

  return (
    <Editor
      path={fileUri(active)}
      defaultLanguage={fileLanguage(active)}
      defaultValue={files[active]}
      theme="rollbook-dark"
      // The models are ours (syncModels): never let the wrapper dispose one on unmount.
      keepCurrentModel
      loading={<div className="p-4 text-zinc-500">Loading editor…</div>}
      options={{
        readOnly,
        fontSize: 13,
        minimap: { enabled: false },
        scrollBeyondLastLine: false,
        tabSize: 2,
        renderWhitespace: "selection",
        fixedOverflowWidgets: true,
        padding: { top: 8 },
      }}
      onMount={(editor, m) => {
        editorRef.current = editor;
        editor.addCommand(m.KeyMod.CtrlCmd | m.KeyCode.KeyS, () => onSaveRef.current?.());
        if (props.reveal) reveal(editor, props.reveal);
      }}
    />
  );
}
