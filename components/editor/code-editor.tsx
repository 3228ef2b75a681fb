"use client";
/**
 * The Monaco editor over the experiment's four files, one model each (file:///scenario.ts, …), all created
 * up front so the TS worker resolves `import type { Task } from "./scenario"` in reward.ts whichever tab
 * is open. Client-only: load it with next/dynamic({ ssr: false }).
 */
import Editor from "@monaco-editor/react";
import { useEffect, useRef, useState } from "react";
import type { Diagnostic, ExperimentFiles } from "@contracts";
import { setupMonaco, monaco } from "./monaco-setup";
import { diagnosticFile, fileLanguage, filePaths, fileUri, jsonlDiagnostics } from "./files";

export interface RevealRequest {
  file: string;
  line: number;
  column: number;
  /** Changes on every request, so revealing the same place twice works. */
  nonce: number;
}

export interface CodeEditorProps {
  sdkTypes: string;
  /** Contents to load into the models; they are (re)loaded whenever `loadKey` changes. */
  files: ExperimentFiles;
  loadKey: string;
  active: string;
  onChange: (file: string, value: string) => void;
  /** Server diagnostics (compile errors, config errors) shown as markers at their file and line. */
  diagnostics: readonly Diagnostic[];
  reveal: RevealRequest | null;
  onSave?: () => void;
  readOnly?: boolean;
}

const MARKER_OWNER = "rollbook";

function getModel(name: string) {
  return monaco.editor.getModel(monaco.Uri.parse(fileUri(name)));
}

function ensureModels(files: ExperimentFiles) {
  for (const name of filePaths(files)) {
    const model = getModel(name);
    if (!model) monaco.editor.createModel(files[name] ?? "", fileLanguage(name), monaco.Uri.parse(fileUri(name)));
  }
}

function toMarker(d: Diagnostic, model: monaco.editor.ITextModel): monaco.editor.IMarkerData {
  const line = Math.min(Math.max(1, d.line), model.getLineCount());
  const column = Math.max(1, d.column);
  const endColumn = Math.max(column + 1, model.getLineMaxColumn(line));
  return {
    severity: d.severity === "warning" ? monaco.MarkerSeverity.Warning : monaco.MarkerSeverity.Error,
    message: d.message,
    startLineNumber: line,
    startColumn: column,
    endLineNumber: line,
    endColumn,
    source: "rollbook",
  };
}

function setJsonlMarkers(model: monaco.editor.ITextModel) {
  monaco.editor.setModelMarkers(model, "jsonl", jsonlDiagnostics(model.getValue()).map((d) => toMarker(d, model)));
}

export default function CodeEditor(props: CodeEditorProps) {
  const { sdkTypes, files, loadKey, active, onChange, diagnostics, reveal, onSave, readOnly = false } = props;
  // Configure Monaco and create the models before the editor mounts (idempotent across remounts).
  useState(() => {
    setupMonaco(sdkTypes);
    ensureModels(files);
    return null;
  });
  const editorRef = useRef<monaco.editor.IStandaloneCodeEditor | null>(null);
  const onChangeRef = useRef(onChange);
  const onSaveRef = useRef(onSave);
  useEffect(() => {
    onChangeRef.current = onChange;
    onSaveRef.current = onSave;
  });

  // Load a version's files into the models (a different experiment, or the saved version after a reload).
  useEffect(() => {
    ensureModels(files);
    for (const name of filePaths(files)) {
      const model = getModel(name);
      const text = files[name] ?? "";
      if (model && model.getValue() !== text) model.setValue(text);
    }
    // Only a new loadKey reloads; `files` changing under the same key is the user's own typing.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [loadKey]);

  // Report edits of every model (not only the visible one: setValue above is filtered by comparison).
  // Re-subscribe when the set of files changes (a file added or removed), not on every keystroke.
  const pathsKey = filePaths(files).join("\n");
  useEffect(() => {
    const subs = pathsKey.split("\n").map((name) => {
      const model = getModel(name);
      if (!model) return null;
      if (name === "tasks.jsonl") setJsonlMarkers(model);
      return model.onDidChangeContent(() => {
        if (name === "tasks.jsonl") setJsonlMarkers(model);
        onChangeRef.current(name, model.getValue());
      });
    });
    return () => subs.forEach((s) => s?.dispose());
  }, [loadKey, pathsKey]);

  useEffect(() => {
    const paths = pathsKey.split("\n");
    const byPath = Object.fromEntries(paths.map((p) => [p, ""]));
    for (const name of paths) {
      const model = getModel(name);
      if (!model) continue;
      const mine = diagnostics.filter((d) => diagnosticFile(d, byPath) === name);
      monaco.editor.setModelMarkers(model, MARKER_OWNER, mine.map((d) => toMarker(d, model)));
    }
  }, [diagnostics, pathsKey]);

  useEffect(() => {
    const editor = editorRef.current;
    if (!editor || !reveal) return;
    const model = getModel(reveal.file);
    if (model && editor.getModel() !== model) editor.setModel(model);
    const position = { lineNumber: reveal.line, column: reveal.column };
    editor.setPosition(position);
    editor.revealPositionInCenter(position);
    editor.focus();
  }, [reveal]);

  return (
    <Editor
      path={fileUri(active)}
      defaultLanguage={fileLanguage(active)}
      defaultValue={files[active]}
      theme="rollbook-dark"
      // The models are ours: never let the wrapper dispose one on unmount.
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
        if (reveal) {
          const position = { lineNumber: reveal.line, column: reveal.column };
          editor.setPosition(position);
          editor.revealPositionInCenter(position);
        }
      }}
    />
  );
}
