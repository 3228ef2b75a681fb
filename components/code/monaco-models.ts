"use client";
/**
 * The experiment's files as Monaco models (file:///scenario.ts, file:///lib/tools.ts, …) and the markers on
 * them. One model per file, created when a file appears and disposed when it goes, so the TS worker sees
 * exactly the experiment's files: a deleted helper no longer satisfies an import, a renamed one resolves
 * under its new path only. Client-only (imports monaco).
 */
import { isExperimentPath, type Diagnostic } from "@contracts";
import { monaco } from "./monaco-setup";
import { fileLanguage, fileUri } from "./files";

/** Marker owners: the runner's check, the latest run's runtime errors, tasks.jsonl lines; Monaco's own TS and JSON workers use "typescript" and "json". */
export const OWNER_CHECK = "rollbook";
export const OWNER_RUNTIME = "rollbook-runtime";
export const OWNER_JSONL = "jsonl";
export const OWNER_TS = "typescript";

export function getModel(path: string): monaco.editor.ITextModel | null {
  return monaco.editor.getModel(monaco.Uri.parse(fileUri(path)));
}

/** The experiment path of one of our models, or null for any other model. */
export function modelPath(model: monaco.editor.ITextModel): string | null {
  const uri = model.uri;
  if (uri.scheme !== "file") return null;
  const path = uri.path.replace(/^\/+/, "");
  return isExperimentPath(path) ? path : null;
}

/** Create a model for every file that lacks one and dispose those of files that are gone. */
export function syncModels(files: Record<string, string>): void {
  for (const model of monaco.editor.getModels()) {
    const path = modelPath(model);
    if (path !== null && !Object.hasOwn(files, path)) model.dispose();
  }
  for (const [path, text] of Object.entries(files)) {
    if (!getModel(path)) monaco.editor.createModel(text, fileLanguage(path), monaco.Uri.parse(fileUri(path)));
  }
}

/**
 * Re-check every model. Monaco's TS diagnostics re-run only for a model whose own text changed, so after a
 * helper is added, renamed or deleted, scenario.ts would keep saying its import resolves (or not) until it
 * was edited. Re-setting the diagnostics options is the public way to make Monaco recompute them all (it
 * restarts the TS worker, a second or so: acceptable for a change of the file set, not for keystrokes).
 */
export function revalidateAll(): void {
  const ts = monaco.typescript.typescriptDefaults;
  ts.setDiagnosticsOptions(ts.getDiagnosticsOptions());
}

/** Load a version's files: models follow the file set and take the files' text. */
export function loadFiles(files: Record<string, string>): void {
  syncModels(files);
  for (const [path, text] of Object.entries(files)) {
    const model = getModel(path);
    if (model && model.getValue() !== text) model.setValue(text);
  }
}

export function toMarker(d: Diagnostic, model: monaco.editor.ITextModel): monaco.editor.IMarkerData {
  const line = Math.min(Math.max(1, d.line), model.getLineCount());
  const maxColumn = model.getLineMaxColumn(line);
  const column = Math.min(Math.max(1, d.column), maxColumn);
  // The rest of the line from the position: wide enough to see, and it keeps the squiggle on one line.
  const endColumn = Math.max(column + 1, maxColumn);
  return {
    severity: d.severity === "warning" ? monaco.MarkerSeverity.Warning : monaco.MarkerSeverity.Error,
    message: d.message,
    startLineNumber: line,
    startColumn: column,
    endLineNumber: line,
    endColumn,
    source: "rollbook",
  };
}

const sameMarkers = (a: readonly monaco.editor.IMarkerData[], b: readonly monaco.editor.IMarkerData[]) =>
  a.length === b.length &&
  a.every((m, i) => {
    const n = b[i]!;
    return m.message === n.message && m.startLineNumber === n.startLineNumber && m.startColumn === n.startColumn && m.severity === n.severity;
  });

/**
 * Set `owner`'s markers on the model, leaving out any that another owner in `unlessShownBy` already shows at
 * the same line with the same message (the runner's check and the editor's own agree — the TS worker,
 * the tasks.jsonl parser — and a hover should not say it twice). Returns without touching Monaco when
 * nothing changed, so calling it from a marker listener cannot loop.
 */
export function setMarkers(model: monaco.editor.ITextModel, owner: string, diagnostics: readonly Diagnostic[], unlessShownBy: readonly string[] = []): void {
  const shown = new Set(
    unlessShownBy.flatMap((o) => monaco.editor.getModelMarkers({ resource: model.uri, owner: o }).map((m) => `${m.startLineNumber}\n${m.message}`)),
  );
  const next = diagnostics.map((d) => toMarker(d, model)).filter((m) => !shown.has(`${m.startLineNumber}\n${m.message}`));
  const current = monaco.editor.getModelMarkers({ resource: model.uri, owner });
  if (!sameMarkers(current, next)) monaco.editor.setModelMarkers(model, owner, next);
}

export interface MarkerCount {
  errors: number;
  warnings: number;
}

/** Errors and warnings per file over every owner, each distinct problem (line + message) once. */
export function markerCounts(): Record<string, MarkerCount> {
  const out: Record<string, MarkerCount> = {};
  for (const model of monaco.editor.getModels()) {
    const path = modelPath(model);
    if (path === null) continue;
    const errors = new Set<string>();
    const warnings = new Set<string>();
    for (const m of monaco.editor.getModelMarkers({ resource: model.uri })) {
      const key = `${m.startLineNumber}\n${m.message}`;
      if (m.severity === monaco.MarkerSeverity.Error) errors.add(key);
      else if (m.severity === monaco.MarkerSeverity.Warning) warnings.add(key);
    }
    out[path] = { errors: errors.size, warnings: warnings.size };
  }
  return out;
}
