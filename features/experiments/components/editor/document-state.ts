/**
 * The editor's document: the experiment's files as edited, the files as last saved (the baseline of the
 * unsaved-changes markers) and the version they are based on. Pure transitions, so the hook that holds the
 * document (use-experiment-document.ts) only wires them to React state and the server; each returns the
 * same object when nothing changes, so React skips the re-render.
 */
import type { ExperimentFiles } from "@contracts";
import { filePaths } from "@/components/code/files";
import type { LoadedVersion } from "../version-history";

export interface Doc {
  experimentId: string;
  /** Changes only when a different experiment (or version) is loaded into the editor. */
  loadKey: string;
  files: ExperimentFiles;
  /** The files as last saved: the baseline of the unsaved-changes markers. */
  saved: ExperimentFiles;
  versionNumber: number;
}

/** The experiment as the server has it (experiments.get): its latest version. */
export interface ServerExperiment {
  id: string;
  version: LoadedVersion;
}

export function sameFiles(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

/**
 * The document after the server's answer lands: an experiment first loaded (or another one) adopts the
 * server's files; refetches never touch the files (they would clobber edits), but a run start saved the
 * files as a version on the server, whose number is picked up once the refetch shows the same files.
 */
export function reconcileDoc(doc: Doc | null, server: ServerExperiment | undefined): Doc | null {
  if (!server) return doc;
  const v = server.version;
  if (doc?.experimentId !== server.id) return { experimentId: server.id, loadKey: v.id, files: v.files, saved: v.files, versionNumber: v.number };
  if (v.number !== doc.versionNumber && sameFiles(v.files, doc.saved)) return { ...doc, versionNumber: v.number };
  return doc;
}

/** One file's new text from the editor. */
export const editFile = (d: Doc | null, file: string, value: string): Doc | null =>
  d && d.files[file] !== value ? { ...d, files: { ...d.files, [file]: value } } : d;

/** A change to the set of files (a helper created, renamed or deleted). */
export const mapFiles = (d: Doc | null, change: (files: ExperimentFiles) => ExperimentFiles): Doc | null => (d ? { ...d, files: change(d.files) } : d);

/** These files are saved as this version (a save, an accepted run start, or a rebase that keeps the text). */
export const markSaved = (d: Doc | null, files: ExperimentFiles, versionNumber: number): Doc | null => (d ? { ...d, saved: files, versionNumber } : d);

/** Replace the editor's files with a version's (a restore, or "load the latest" after a conflict). */
export const loadVersion = (d: Doc | null, v: LoadedVersion): Doc | null =>
  d ? { ...d, loadKey: v.id, files: v.files, saved: v.files, versionNumber: v.number } : d;

/** The files whose text differs from the saved version's (including files added or deleted since). */
export const dirtyPaths = (doc: Doc | null): Set<string> =>
  new Set(doc ? filePaths({ ...doc.saved, ...doc.files }).filter((n) => doc.files[n] !== doc.saved[n]) : []);
