"use client";
import { useEffect } from "react";

/** Ctrl/⌘+S saves from anywhere on the page (Monaco has its own binding while it has focus). */
export function useSaveShortcut(onSave: () => void) {
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
}
