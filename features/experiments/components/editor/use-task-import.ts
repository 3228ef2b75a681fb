"use client";
/**
 * Import tasks…: the dialog's open state, and the imported rows put into tasks.jsonl through the editor (a
 * replace request, so Ctrl/⌘+Z undoes it) without saving.
 */
import { useState } from "react";
import type { ReplaceRequest } from "@/components/code/code-editor";
import { importedNotice, type Notice } from "./editor-notices";
import type { ImportedTasks } from "./task-import-dialog";

export function useTaskImport({ setActive, setNotice }: { setActive: (file: string) => void; setNotice: (n: Notice) => void }) {
  const [importing, setImporting] = useState(false);
  const [replace, setReplace] = useState<ReplaceRequest | null>(null);
  const importTasks = (t: ImportedTasks) => {
    setImporting(false);
    setActive("tasks.jsonl");
    setReplace({ file: "tasks.jsonl", text: t.text, nonce: Date.now() });
    setNotice(importedNotice(t));
  };
  return { importing, open: () => setImporting(true), close: () => setImporting(false), replace, importTasks };
}
