/**
 * The kind of run the page shows (train, dry run, eval, ART) once something has said it: the run's row, or the
 * live stream's `started` event. Until then null, and the page shows no kind badge and offers no Resume:
 * guessing "train" made a loading dry run's badge say "train" (issue 31).
 */
export function knownRunKind<K extends string>(row: { kind: K } | null | undefined, started: { kind: K } | null | undefined): K | null {
  return row?.kind ?? started?.kind ?? null;
}
