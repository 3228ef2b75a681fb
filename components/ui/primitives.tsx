"use client";
/** The few shared building blocks: buttons, badges, tabs, empty and error states. Tailwind only. */
import type { ButtonHTMLAttributes, ReactNode } from "react";

type Variant = "primary" | "secondary" | "ghost" | "danger";

const VARIANTS: Record<Variant, string> = {
  primary: "bg-amber-400 text-zinc-950 hover:bg-amber-300 disabled:bg-amber-400/40",
  secondary: "border border-zinc-700 bg-zinc-800 text-zinc-100 hover:bg-zinc-700 disabled:text-zinc-500",
  ghost: "text-zinc-300 hover:bg-zinc-800 disabled:text-zinc-600",
  danger: "border border-red-800 bg-red-950 text-red-200 hover:bg-red-900 disabled:opacity-50",
};

export function Button({
  variant = "secondary",
  className = "",
  type = "button",
  ...props
}: ButtonHTMLAttributes<HTMLButtonElement> & { variant?: Variant }) {
  return (
    <button
      type={type}
      className={`inline-flex h-7 items-center gap-1.5 rounded px-2.5 text-[13px] font-medium whitespace-nowrap transition-colors disabled:cursor-not-allowed ${VARIANTS[variant]} ${className}`}
      {...props}
    />
  );
}

const STATUS_STYLE: Record<string, string> = {
  queued: "bg-zinc-800 text-zinc-300 ring-zinc-600",
  running: "bg-sky-950 text-sky-300 ring-sky-700",
  completed: "bg-emerald-950 text-emerald-300 ring-emerald-700",
  failed: "bg-red-950 text-red-300 ring-red-700",
  stopped: "bg-amber-950 text-amber-300 ring-amber-700",
  lost: "bg-amber-950 text-amber-200 ring-amber-500",
};

/** What a status means when it is not self-evident (the badge's tooltip). */
const STATUS_TITLE: Record<string, string> = {
  lost: "runner lost: the run's runner has not answered for a while; the run may still be going there",
};

/** An ART run (features/art) has no runner: lost means its client went quiet. */
const IDLE_STYLE = "bg-zinc-800/60 text-zinc-300 ring-zinc-700";

const ART_LOST_TITLE = "client silent: the ART or Tinker client has sent nothing for a while (ART_CLIENT_SILENT_MS); its next call resumes the run";

/**
 * `idle`: a running run nothing is happening in (an ART run whose client went quiet: features/art/art-idle.ts)
 * reads as its label ("idle since 14:03") without the live dot; its status is still running.
 */
export function StatusBadge({ status, testId, kind, idle }: { status: string; testId?: string; kind?: string; idle?: { label: string; title: string } | null }) {
  const artLost = status === "lost" && (kind === "art" || kind === "tinker");
  const idleNow = status === "running" && idle ? idle : null;
  return (
    <span
      data-testid={testId}
      data-idle={idleNow ? "true" : undefined}
      title={idleNow ? idleNow.title : artLost ? ART_LOST_TITLE : STATUS_TITLE[status]}
      className={`inline-flex items-center gap-1.5 rounded-full px-2 py-0.5 text-[11px] font-medium whitespace-nowrap ring-1 ring-inset ${
        idleNow ? IDLE_STYLE : (STATUS_STYLE[status] ?? STATUS_STYLE.queued)
      }`}
    >
      {status === "running" && !idleNow && <span aria-hidden className="h-1.5 w-1.5 animate-pulse rounded-full bg-sky-400" />}
      {idleNow ? idleNow.label : status === "lost" ? (artLost ? "client silent" : "runner lost") : status}
    </span>
  );
}

const KIND_STYLE: Record<string, string> = {
  train: "text-violet-300 ring-violet-800",
  "dry-run": "text-zinc-300 ring-zinc-700",
  eval: "text-teal-300 ring-teal-800",
  art: "text-amber-300 ring-amber-800",
  tinker: "text-sky-300 ring-sky-800",
};

/** How a kind reads where it differs from its stored name (an OpenPipe ART client's run). */
const KIND_LABEL: Record<string, string> = { art: "ART", tinker: "Tinker" };

/** A run kind as people read it: "ART" for `art`, the kind itself otherwise. */
export function kindLabel(kind: string): string {
  return KIND_LABEL[kind] ?? kind;
}

export function KindBadge({ kind }: { kind: string }) {
  return (
    <span className={`inline-flex rounded px-1.5 py-0.5 font-mono text-[11px] ring-1 ring-inset ${KIND_STYLE[kind] ?? KIND_STYLE["dry-run"]}`}>
      {kindLabel(kind)}
    </span>
  );
}

export function Tabs<T extends string>({
  tabs,
  value,
  onChange,
  label,
  className = "",
}: {
  tabs: readonly { id: T; label: ReactNode }[];
  value: T;
  onChange: (id: T) => void;
  label: string;
  className?: string;
}) {
  return (
    <div role="tablist" aria-label={label} className={`flex items-end gap-0.5 border-b border-zinc-800 ${className}`}>
      {tabs.map((t) => (
        <button
          key={t.id}
          type="button"
          role="tab"
          aria-selected={t.id === value}
          onClick={() => onChange(t.id)}
          className={`-mb-px flex items-center gap-1.5 border-b-2 px-3 py-1.5 text-[13px] ${
            t.id === value ? "border-amber-400 text-zinc-100" : "border-transparent text-zinc-400 hover:text-zinc-200"
          }`}
        >
          {t.label}
        </button>
      ))}
    </div>
  );
}

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="flex flex-col items-center justify-center gap-1 rounded border border-dashed border-zinc-800 px-6 py-10 text-center">
      <div className="text-zinc-300">{title}</div>
      {children && <div className="max-w-md text-[12px] text-zinc-500">{children}</div>}
    </div>
  );
}

export function ErrorBox({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div role="alert" className="rounded border border-red-900 bg-red-950/60 px-3 py-2 text-red-200">
      <div className="font-medium">{title}</div>
      {children && <div className="mt-1 text-[12px] text-red-300/90">{children}</div>}
    </div>
  );
}

export function Stat({ label, value, title }: { label: string; value: ReactNode; title?: string }) {
  return (
    <div className="flex flex-col" title={title}>
      <span className="text-[10px] tracking-wide text-zinc-500 uppercase">{label}</span>
      <span className="font-mono text-[13px] text-zinc-100 tabular-nums">{value}</span>
    </div>
  );
}

export function Spinner({ label = "Loading" }: { label?: string }) {
  return (
    <span role="status" className="inline-flex items-center gap-2 text-zinc-500">
      <span aria-hidden className="h-3 w-3 animate-spin rounded-full border-2 border-zinc-600 border-t-zinc-300" />
      {label}
    </span>
  );
}
