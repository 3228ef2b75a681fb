"use client";
/**
 * The re-score panel's Monaco editor: the run's reward.ts, editable, with the run's other code files loaded
 * beside it (read-only models) so `import type { Task } from "./scenario"` and the SDK's types resolve as in
 * the experiment editor. The models live under file:///.rescore/<run>/…, apart from the experiment editor's
 * file:///reward.ts, so an open editor tab elsewhere is never overwritten. The runner's diagnostics are
 * markers at their line. Client-only: load it with next/dynamic({ ssr: false }).
 */
import Editor from "@monaco-editor/react";
import { useEffect, useRef, useState } from "react";
import { isCodeFile, type Diagnostic } from "@contracts";
import { OWNER_CHECK, setMarkers } from "@/components/code/monaco-models";
import { monaco, setTypeLibs, setupMonaco, type TypeLib } from "@/components/code/monaco-setup";

export interface RevealLine {
  line: number;
  column: number;
  nonce: number;
}

const uriFor = (runId: string, path: string) => monaco.Uri.parse(`file:///.rescore/${runId}/${path}`);

export default function RescoreEditor(props: {
  runId: string;
  /** The run's frozen files: reward.ts is the editor's starting text; the other .ts files give it types. */
  files: Record<string, string>;
  typeLibs: readonly TypeLib[];
  onChange: (text: string) => void;
  /** The runner's diagnostics for reward.ts. */
  diagnostics: readonly Diagnostic[];
  reveal: RevealLine | null;
}) {
  const { runId, files, typeLibs, onChange, diagnostics, reveal } = props;
  useState(() => setupMonaco());
  useEffect(() => setTypeLibs(typeLibs), [typeLibs]);
  const editorRef = useRef<monaco.editor.IStandaloneCodeEditor | null>(null);

  // The run's other code files as models beside reward.ts (its imports resolve against them), gone with the panel.
  useEffect(() => {
    const made = Object.entries(files)
      .filter(([path]) => isCodeFile(path) && path !== "reward.ts")
      .map(([path, text]) => monaco.editor.getModel(uriFor(runId, path)) ?? monaco.editor.createModel(text, "typescript", uriFor(runId, path)));
    return () => made.forEach((m) => m.dispose());
  }, [runId, files]);

  useEffect(() => {
    const model = monaco.editor.getModel(uriFor(runId, "reward.ts"));
    if (model) setMarkers(model, OWNER_CHECK, diagnostics);
  }, [runId, diagnostics]);

  useEffect(() => {
    const editor = editorRef.current;
    if (!editor || !reveal) return;
    const position = { lineNumber: reveal.line, column: reveal.column };
    editor.setPosition(position);
    editor.revealPositionInCenter(position);
    editor.focus();
  }, [reveal]);

  return (
    <Editor
      path={uriFor(runId, "reward.ts").toString()}
      defaultLanguage="typescript"
      defaultValue={files["reward.ts"] ?? ""}
      theme="rollbook-dark"
      loading={<div className="p-4 text-zinc-500">Loading editor…</div>}
      onChange={(value) => onChange(value ?? "")}
      options={{
        fontSize: 13,
        minimap: { enabled: false },
        scrollBeyondLastLine: false,
        tabSize: 2,
        fixedOverflowWidgets: true,
        automaticLayout: true,
        padding: { top: 8 },
      }}
      onMount={(editor) => {
        editorRef.current = editor;
        const model = editor.getModel();
        if (model) setMarkers(model, OWNER_CHECK, diagnostics);
      }}
    />
  );
}
