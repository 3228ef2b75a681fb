"use client";
/**
 * Monaco's side-by-side diff editor, read-only, with Monaco served from our bundle (monaco-setup), never
 * a CDN. Client-only: load it with next/dynamic({ ssr: false }).
 *
 * @monaco-editor/react 4.7 disposes a DiffEditor's two models before the widget that still holds them,
 * which Monaco reports as "TextModel got disposed before DiffEditorWidget model got reset" on every
 * unmount (monaco-react#647). So the library keeps its models, and this component detaches and disposes
 * them itself in a layout-effect cleanup, which React runs before the library's passive one.
 */
import { DiffEditor } from "@monaco-editor/react";
import { useLayoutEffect, useRef, useState } from "react";
import { setupMonaco, type monaco } from "./monaco-setup";

const OPTIONS: monaco.editor.IDiffEditorConstructionOptions = {
  readOnly: true,
  originalEditable: false,
  renderSideBySide: true,
  automaticLayout: true,
  minimap: { enabled: false },
  fontSize: 12,
  scrollBeyondLastLine: false,
  // Collapse long unchanged stretches, as a code review does.
  hideUnchangedRegions: { enabled: true, contextLineCount: 3, minimumLineCount: 6 },
};

export default function MonacoDiff({ original, modified, language }: { original: string; modified: string; language: string }) {
  useState(() => setupMonaco());
  const editorRef = useRef<monaco.editor.IStandaloneDiffEditor | null>(null);
  useLayoutEffect(
    () => () => {
      const editor = editorRef.current;
      editorRef.current = null;
      const models = editor?.getModel();
      editor?.setModel(null);
      models?.original.dispose();
      models?.modified.dispose();
    },
    [],
  );
  return (
    <DiffEditor
      height="100%"
      theme="rollbook-dark"
      original={original}
      modified={modified}
      language={language}
      options={OPTIONS}
      keepCurrentOriginalModel
      keepCurrentModifiedModel
      onMount={(editor) => {
        editorRef.current = editor;
      }}
      loading={<div className="p-4 text-[12px] text-zinc-500">Loading diff…</div>}
    />
  );
}
