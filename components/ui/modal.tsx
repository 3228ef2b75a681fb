"use client";
/**
 * A modal on the native <dialog> (as the task import does): the browser keeps focus inside and closes it
 * on Escape, and the page behind is inert. The caller unmounts it in onClose.
 */
import { useEffect, useRef, type ReactNode } from "react";

export function Modal({
  title,
  onClose,
  children,
  width = "w-[min(28rem,calc(100vw-2rem))]",
  testId,
}: {
  title: ReactNode;
  onClose: () => void;
  children: ReactNode;
  /** Tailwind width classes. */
  width?: string;
  testId?: string;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
  }, []);
  return (
    <dialog
      ref={ref}
      onClose={onClose}
      aria-label={typeof title === "string" ? title : undefined}
      data-testid={testId}
      className={`m-auto ${width} rounded-lg border border-zinc-700 bg-zinc-900 p-0 text-zinc-200 shadow-2xl backdrop:bg-black/60`}
    >
      <div className="flex items-center gap-3 border-b border-zinc-800 px-5 py-3">
        <h2 className="min-w-0 truncate text-[15px] font-semibold text-zinc-100">{title}</h2>
        <button type="button" onClick={() => ref.current?.close()} aria-label="Close" className="ml-auto rounded px-2 text-zinc-500 hover:bg-zinc-800 hover:text-zinc-200">
          ✕
        </button>
      </div>
      {children}
    </dialog>
  );
}

/** Closes the nearest open <dialog> (the Cancel buttons inside a Modal). */
export function closeDialog(el: HTMLElement | null): void {
  el?.closest("dialog")?.close();
}
