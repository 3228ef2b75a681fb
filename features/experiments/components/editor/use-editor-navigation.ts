"use client";
/** Which file the editor shows, and requests to scroll it to a line (a diagnostic picked, a Check's first error). */
import { useCallback, useState } from "react";
import type { RevealRequest } from "@/components/code/code-editor";

export interface EditorNavigation {
  active: string;
  setActive: React.Dispatch<React.SetStateAction<string>>;
  reveal: RevealRequest | null;
  /** Open the file and put the cursor at this line and column. */
  revealAt: (file: string, line: number, column: number) => void;
}

export function useEditorNavigation(): EditorNavigation {
  const [active, setActive] = useState<string>("scenario.ts");
  const [reveal, setReveal] = useState<RevealRequest | null>(null);
  const revealAt = useCallback((file: string, line: number, column: number) => {
    setActive(file);
    setReveal({ file, line, column, nonce: Date.now() });
  }, []);
  return { active, setActive, reveal, revealAt };
}
