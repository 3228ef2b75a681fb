"use client";
/**
 * What can be done to an experiment as a whole — rename, duplicate, archive/unarchive, delete — as one "⋯"
 * menu, shared by the experiments list and the editor header. Members and above see the writes, admins
 * also Delete (the server refuses the rest anyway). Delete asks for the experiment's name typed out, since
 * it takes every version and run with it.
 */
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useEffect, useRef, useState, type FormEvent } from "react";
import { can } from "@/contracts/actions";
import { useRole } from "@/components/auth/use-role";
import { useTRPC } from "@/components/trpc";
import { Button } from "@/components/ui/primitives";
import { closeDialog, Modal } from "@/components/ui/modal";

export interface ExperimentRef {
  id: string;
  name: string;
  archivedAt: Date | string | null;
  /** Shown in the delete confirmation when known. */
  runCount?: number;
}

const inputClass =
  "w-full rounded border border-zinc-700 bg-zinc-950 px-2 py-1 text-zinc-100 outline-none focus:border-amber-400/70 aria-invalid:border-red-700";

function useInvalidateExperiments() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return (runsToo = false) => {
    void queryClient.invalidateQueries({ queryKey: trpc.experiments.pathKey() });
    if (runsToo) void queryClient.invalidateQueries({ queryKey: trpc.runs.pathKey() });
  };
}

export function RenameDialog({ experiment, onClose }: { experiment: ExperimentRef; onClose: () => void }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateExperiments();
  const [name, setName] = useState(experiment.name);
  const formRef = useRef<HTMLFormElement>(null);
  const rename = useMutation(
    trpc.experiments.rename.mutationOptions({
      onSuccess: () => {
        invalidate();
        closeDialog(formRef.current);
      },
    }),
  );
  const trimmed = name.trim();
  const localError = trimmed === "" ? "A name is required." : null;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (localError || rename.isPending) return;
    if (trimmed === experiment.name) return closeDialog(formRef.current);
    rename.mutate({ id: experiment.id, name: trimmed });
  };
  const error = localError ?? (rename.error ? rename.error.message : null);
  return (
    <Modal title="Rename experiment" onClose={onClose} testId="rename-experiment">
      <form ref={formRef} onSubmit={submit} className="flex flex-col gap-3 p-5">
        <label className="flex flex-col gap-1">
          <span className="text-[12px] text-zinc-400">Name</span>
          <input
            autoFocus
            name="name"
            value={name}
            maxLength={120}
            onChange={(e) => {
              setName(e.target.value);
              rename.reset();
            }}
            aria-invalid={error !== null}
            aria-describedby="rename-error"
            className={inputClass}
          />
          <span id="rename-error" role={error ? "alert" : undefined} className="min-h-4 text-[12px] text-red-300">
            {error}
          </span>
        </label>
        <div className="flex justify-end gap-2">
          <Button onClick={(e) => closeDialog(e.currentTarget)}>Cancel</Button>
          <Button type="submit" variant="primary" disabled={localError !== null || rename.isPending}>
            {rename.isPending ? "Renaming…" : "Rename"}
          </Button>
        </div>
      </form>
    </Modal>
  );
}

export function DeleteDialog({ experiment, onClose, onDeleted }: { experiment: ExperimentRef; onClose: () => void; onDeleted?: () => void }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateExperiments();
  const [typed, setTyped] = useState("");
  const formRef = useRef<HTMLFormElement>(null);
  const del = useMutation(
    trpc.experiments.delete.mutationOptions({
      onSuccess: () => {
        invalidate(true);
        closeDialog(formRef.current);
        onDeleted?.();
      },
    }),
  );
  const matches = typed === experiment.name;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (matches && !del.isPending) del.mutate({ id: experiment.id });
  };
  const runs = experiment.runCount === undefined ? "all its runs" : experiment.runCount === 1 ? "its 1 run" : `its ${experiment.runCount} runs`;
  return (
    <Modal title="Delete experiment" onClose={onClose} testId="delete-experiment">
      <form ref={formRef} onSubmit={submit} className="flex flex-col gap-3 p-5 text-[13px]">
        <p className="text-zinc-300">
          This deletes <span className="font-semibold text-zinc-100">{experiment.name}</span> with every version and {runs} (their metrics,
          rollouts and checkpoint records). It cannot be undone. Archive it instead to only hide it.
        </p>
        <label className="flex flex-col gap-1">
          <span className="text-[12px] text-zinc-400">Type the experiment&apos;s name to confirm</span>
          <input
            autoFocus
            name="confirm-name"
            value={typed}
            autoComplete="off"
            onChange={(e) => {
              setTyped(e.target.value);
              del.reset();
            }}
            className={inputClass}
          />
        </label>
        {del.error && (
          <p role="alert" className="text-[12px] text-red-300">
            {del.error.message}
          </p>
        )}
        <div className="flex justify-end gap-2">
          <Button onClick={(e) => closeDialog(e.currentTarget)}>Cancel</Button>
          <Button type="submit" variant="danger" disabled={!matches || del.isPending}>
            {del.isPending ? "Deleting…" : "Delete experiment"}
          </Button>
        </div>
      </form>
    </Modal>
  );
}

/**
 * The "⋯" menu. `onHistory`: where the version history can be opened (the editor); `onDeleted`: what to do
 * after a delete (the editor leaves for the list). Duplicate opens the copy.
 */
export function ExperimentMenu({ experiment, onHistory, onDeleted }: { experiment: ExperimentRef; onHistory?: () => void; onDeleted?: () => void }) {
  const trpc = useTRPC();
  const router = useRouter();
  const role = useRole();
  const invalidate = useInvalidateExperiments();
  const [open, setOpen] = useState(false);
  const [dialog, setDialog] = useState<"rename" | "delete" | null>(null);
  const [error, setError] = useState<string | null>(null);
  const rootRef = useRef<HTMLDivElement>(null);

  const duplicate = useMutation(
    trpc.experiments.duplicate.mutationOptions({
      onSuccess: ({ id }) => {
        invalidate();
        router.push(`/experiments/${id}`);
      },
      onError: (e) => setError(e.message),
    }),
  );
  const archive = useMutation(
    trpc.experiments.setArchived.mutationOptions({
      onSuccess: () => invalidate(),
      onError: (e) => setError(e.message),
    }),
  );

  // Closes on a click outside or Escape, like any menu.
  useEffect(() => {
    if (!open) return;
    const onDown = (e: MouseEvent) => {
      if (!rootRef.current?.contains(e.target as Node)) setOpen(false);
    };
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && setOpen(false);
    document.addEventListener("mousedown", onDown);
    document.addEventListener("keydown", onKey);
    return () => {
      document.removeEventListener("mousedown", onDown);
      document.removeEventListener("keydown", onKey);
    };
  }, [open]);

  // Each item asks the action table (contracts/actions.ts): a role sees only what the server lets it do.
  const canRename = can(role, "experiment.rename");
  const canDuplicate = can(role, "experiment.duplicate");
  const canArchive = can(role, "experiment.archive");
  const canDelete = can(role, "experiment.delete");
  const archived = Boolean(experiment.archivedAt);
  const item = (label: string, onClick: () => void, opts: { danger?: boolean; disabled?: boolean; title?: string } = {}) => (
    <button
      type="button"
      role="menuitem"
      disabled={opts.disabled}
      title={opts.title}
      onClick={() => {
        setOpen(false);
        setError(null);
        onClick();
      }}
      className={`block w-full px-3 py-1.5 text-left text-[13px] disabled:text-zinc-600 ${opts.danger ? "text-red-300 hover:bg-red-950/60" : "text-zinc-200 hover:bg-zinc-800"}`}
    >
      {label}
    </button>
  );

  return (
    <div ref={rootRef} className="relative inline-flex items-center gap-2">
      <button
        type="button"
        aria-haspopup="menu"
        aria-expanded={open}
        aria-label={`Actions for ${experiment.name}`}
        onClick={() => setOpen((o) => !o)}
        className="rounded px-1.5 text-[15px] leading-6 text-zinc-400 hover:bg-zinc-800 hover:text-zinc-100"
      >
        ⋯
      </button>
      {open && (
        <div role="menu" className="absolute top-full right-0 z-30 mt-1 w-48 overflow-hidden rounded border border-zinc-700 bg-zinc-900 py-1 shadow-xl">
          {onHistory && item("Version history…", onHistory)}
          {canRename && item("Rename…", () => setDialog("rename"))}
          {canDuplicate && item(duplicate.isPending ? "Duplicating…" : "Duplicate", () => duplicate.mutate({ id: experiment.id }), { disabled: duplicate.isPending, title: "A new experiment with the latest saved version's files" })}
          {canArchive && item(archived ? "Unarchive" : "Archive", () => archive.mutate({ id: experiment.id, archived: !archived }), { title: archived ? "Show it in the experiments list again" : "Hide it from the experiments list; its runs stay" })}
          {canDelete && item("Delete…", () => setDialog("delete"), { danger: true })}
          {!onHistory && !canRename && !canDuplicate && !canArchive && <p className="px-3 py-1.5 text-[12px] text-zinc-500">Viewers cannot change experiments.</p>}
        </div>
      )}
      {error && (
        <span role="alert" className="max-w-xs truncate text-[12px] text-red-300" title={error}>
          {error}
        </span>
      )}
      {dialog === "rename" && <RenameDialog experiment={experiment} onClose={() => setDialog(null)} />}
      {dialog === "delete" && <DeleteDialog experiment={experiment} onClose={() => setDialog(null)} onDeleted={onDeleted} />}
    </div>
  );
}
