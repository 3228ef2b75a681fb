"use client";
/**
 * An experiment's version history: who saved each version, when, which files it changed, what it restored
 * and how many runs ran it. Pick any version to diff it against the editor's text, and restore it (a new
 * version with its files; nothing is rewritten). Opened by a stale-tab conflict, it starts on the latest
 * version and offers the two ways out: keep your text (the next save is based on the latest) or load the
 * latest (your text is discarded, after asking).
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import type { ExperimentFiles } from "@contracts";
import { useTRPC, useTRPCClient, type RouterOutputs } from "@/components/trpc";
import { fmtAgo, fmtDateTime } from "@/components/ui/format";
import { Button, ErrorBox, Spinner } from "@/components/ui/primitives";
import { Modal } from "@/components/ui/modal";
import { VersionDiff } from "./version-diff";

type Version = RouterOutputs["experiments"]["versions"]["items"][number];
export type LoadedVersion = { id: string; number: number; files: ExperimentFiles };

const CHANGE_SIGN = { added: "A", removed: "D", modified: "M" } as const;
const CHANGE_CLASS = { added: "text-emerald-300", removed: "text-red-300", modified: "text-amber-300" } as const;

function VersionRow({ v, selected, latest, onSelect }: { v: Version; selected: boolean; latest: boolean; onSelect: () => void }) {
  const shown = v.changes.slice(0, 4);
  return (
    <li>
      <button
        type="button"
        onClick={onSelect}
        aria-current={selected ? "true" : undefined}
        data-testid={`version-${v.number}`}
        className={`flex w-full flex-col gap-0.5 border-l-2 px-3 py-2 text-left ${selected ? "border-amber-400 bg-zinc-800" : "border-transparent hover:bg-zinc-800/60"}`}
      >
        <span className="flex items-baseline gap-2">
          <span className="font-mono text-[13px] text-zinc-100">v{v.number}</span>
          {latest && <span className="rounded bg-zinc-700 px-1 text-[10px] text-zinc-200 uppercase">latest</span>}
          <span className="ml-auto text-[11px] text-zinc-500" title={fmtDateTime(v.createdAt)}>
            {fmtAgo(v.createdAt)}
          </span>
        </span>
        <span className="truncate text-[12px] text-zinc-300">{v.author ? v.author.name : "Rollbook"}</span>
        <span className="flex flex-wrap gap-x-2 font-mono text-[11px]">
          {v.number === 1 && v.restoredFrom === null ? (
            <span className="text-zinc-500">created</span>
          ) : v.changes.length === 0 ? (
            <span className="text-zinc-500">no file changes</span>
          ) : (
            shown.map((c) => (
              <span key={c.path} className={CHANGE_CLASS[c.change]} title={`${c.change}: ${c.path}`}>
                {CHANGE_SIGN[c.change]} {c.path}
              </span>
            ))
          )}
          {v.number > 1 && v.changes.length > shown.length && <span className="text-zinc-500">+{v.changes.length - shown.length} more</span>}
        </span>
        {(v.restoredFrom !== null || v.runCount > 0) && (
          <span className="text-[11px] text-zinc-500">
            {v.restoredFrom !== null && `restored from v${v.restoredFrom}`}
            {v.restoredFrom !== null && v.runCount > 0 && " · "}
            {v.runCount > 0 && `${v.runCount} run${v.runCount === 1 ? "" : "s"}`}
          </span>
        )}
      </button>
    </li>
  );
}

export function VersionHistory({
  experimentId,
  editorFiles,
  baseVersion,
  dirty,
  canRestore,
  initialVersion,
  conflict,
  onClose,
  onRestored,
  onRebase,
  onLoad,
}: {
  experimentId: string;
  /** The editor's current text: the right side of every diff. */
  editorFiles: ExperimentFiles;
  /** The version the editor's text is based on. */
  baseVersion: number;
  dirty: boolean;
  /** Whether the caller may restore a version (contracts/actions.ts: experiment.restoreVersion). */
  canRestore: boolean;
  initialVersion?: number;
  /** The stale-tab conflict's message, when that is why the history was opened. */
  conflict?: string | null;
  onClose: () => void;
  /** A restore made (or found) the latest version with these files: the editor loads them. */
  onRestored: (v: LoadedVersion) => void;
  /** Conflict: keep the editor's text, and base the next save on this version. */
  onRebase: (v: LoadedVersion) => void;
  /** Conflict: replace the editor's text with this version's files. */
  onLoad: (v: LoadedVersion) => void;
}) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const queryClient = useQueryClient();
  const first = useQuery(trpc.experiments.versions.queryOptions({ id: experimentId }));
  const [older, setOlder] = useState<Version[]>([]);
  const [nextBefore, setNextBefore] = useState<number | null | undefined>(undefined);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const [olderError, setOlderError] = useState<string | null>(null);
  const items = [...(first.data?.items ?? []), ...older];
  const more = nextBefore === undefined ? (first.data?.nextBefore ?? null) : nextBefore;
  const latestNumber = first.data?.items[0]?.number ?? null;
  const [selected, setSelected] = useState<number | null>(initialVersion ?? null);
  const shown = selected ?? latestNumber;

  const version = useQuery({
    ...trpc.experiments.get.queryOptions({ id: experimentId, versionNumber: shown ?? 1 }),
    enabled: shown !== null,
  });
  const loaded: LoadedVersion | null = version.data ? { id: version.data.version.id, number: version.data.version.number, files: version.data.version.files } : null;

  const restore = useMutation(
    trpc.experiments.restore.mutationOptions({
      onSuccess: (res) => {
        void queryClient.invalidateQueries({ queryKey: trpc.experiments.pathKey() });
        if (loaded) onRestored({ id: res.versionId, number: res.number, files: loaded.files });
      },
    }),
  );

  const loadOlder = async () => {
    if (more === null || loadingOlder) return;
    setLoadingOlder(true);
    setOlderError(null);
    try {
      const page = await client.experiments.versions.query({ id: experimentId, before: more });
      setOlder((o) => [...o, ...page.items]);
      setNextBefore(page.nextBefore);
    } catch (e) {
      setOlderError(e instanceof Error ? e.message : String(e));
    } finally {
      setLoadingOlder(false);
    }
  };

  const doRestore = () => {
    if (!loaded) return;
    if (dirty && !window.confirm(`Restoring loads v${loaded.number}'s files into the editor: your unsaved changes will be discarded. Restore?`)) return;
    restore.mutate({ id: experimentId, number: loaded.number, baseVersion });
  };
  const doLoad = () => {
    if (!loaded) return;
    if (dirty && !window.confirm(`Load v${loaded.number} into the editor? Your unsaved text will be discarded.`)) return;
    onLoad(loaded);
  };

  return (
    <Modal title="Version history" onClose={onClose} width="w-[min(80rem,calc(100vw-2rem))]" testId="version-history">
      <div className="flex h-[75vh] min-h-96 flex-col gap-3 p-4">
        {conflict && (
          <div role="alert" data-testid="save-conflict" className="rounded border border-amber-800 bg-amber-950/50 px-3 py-2 text-[13px] text-amber-100">
            <p>Not saved: {conflict}.</p>
            <p className="mt-1 text-[12px] text-amber-200/80">
              Left is v{latestNumber ?? "…"} as saved, right is your text. Keep your text and your next save goes on top of v{latestNumber ?? "…"}
              (copy over any of its changes you want first: the diff shows them; v{latestNumber ?? "…"} stays in the history either way), or load
              v{latestNumber ?? "…"} instead.
            </p>
            <div className="mt-2 flex gap-2">
              <Button variant="primary" disabled={!loaded || loaded.number !== latestNumber} onClick={() => loaded && onRebase(loaded)}>
                Keep my text (based on v{latestNumber ?? "…"})
              </Button>
              <Button disabled={!loaded || loaded.number !== latestNumber} onClick={doLoad}>
                Load v{latestNumber ?? "…"} (discard my text)
              </Button>
            </div>
          </div>
        )}
        <div className="flex min-h-0 flex-1 gap-3">
          <div className="flex w-64 shrink-0 flex-col overflow-hidden rounded border border-zinc-800">
            {first.error ? (
              <div className="p-2">
                <ErrorBox title="Could not load the history">{first.error.message}</ErrorBox>
              </div>
            ) : !first.data ? (
              <div className="p-3">
                <Spinner label="Loading history…" />
              </div>
            ) : (
              <ul className="min-h-0 flex-1 divide-y divide-zinc-800/70 overflow-y-auto" aria-label="Versions">
                {items.map((v) => (
                  <VersionRow key={v.id} v={v} latest={v.number === latestNumber} selected={v.number === shown} onSelect={() => setSelected(v.number)} />
                ))}
                {more !== null && (
                  <li className="p-2">
                    <Button variant="ghost" onClick={() => void loadOlder()} disabled={loadingOlder}>
                      {loadingOlder ? "Loading…" : "Load older versions"}
                    </Button>
                    {olderError && <p className="text-[12px] text-red-300">{olderError}</p>}
                  </li>
                )}
              </ul>
            )}
          </div>
          <div className="flex min-w-0 flex-1 flex-col gap-2">
            <div className="flex items-center gap-2 text-[12px] text-zinc-400">
              {loaded ? (
                <span>
                  Comparing <span className="font-mono text-zinc-200">v{loaded.number}</span> with the editor&apos;s text (based on v{baseVersion}
                  {dirty ? ", with unsaved changes" : ""})
                </span>
              ) : (
                <span />
              )}
              {canRestore && loaded && !conflict && (
                <Button
                  className="ml-auto"
                  onClick={doRestore}
                  disabled={restore.isPending || loaded.number === latestNumber}
                  title={loaded.number === latestNumber ? "This is the latest version" : `A new version with v${loaded.number}'s files; the history stays as it is`}
                >
                  {restore.isPending ? "Restoring…" : `Restore v${loaded.number}`}
                </Button>
              )}
            </div>
            {restore.error && (
              <p role="alert" className="text-[12px] text-red-300">
                {restore.error.message}
              </p>
            )}
            {version.error ? (
              <ErrorBox title="Could not load the version">{version.error.message}</ErrorBox>
            ) : !loaded ? (
              <Spinner label="Loading version…" />
            ) : (
              <VersionDiff left={loaded.files} right={editorFiles} leftLabel={`v${loaded.number}`} rightLabel="your editor" />
            )}
          </div>
        </div>
      </div>
    </Modal>
  );
}
