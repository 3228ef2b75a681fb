/**
 * How a run is named in lists: its experiment and version ("say-the-word v3"), but an ART run by its model's
 * name (ART's `name`, kept on the run: art-models.ts Run.artClient) with its project beside it — every ART
 * model of a project shares the project's one experiment version, so "<project> v1" would name them all
 * alike. Pure, browser-safe.
 */
export interface RunNameInput {
  kind: string;
  experimentName: string;
  versionNumber: number;
  /** The ART model's name; null for every other kind. */
  artName: string | null;
}

/** `name` the main text, `detail` the muted text after it. */
export function runName(r: RunNameInput): { name: string; detail: string } {
  if ((r.kind === "art" || r.kind === "tinker") && r.artName) return { name: r.artName, detail: r.experimentName };
  return { name: r.experimentName, detail: `v${r.versionNumber}` };
}
