/**
 * One color per compared run, by its position in the comparison, used by every part of the compare page
 * (legend, chart lines, table headers) so a run is the same color everywhere.
 */
const PALETTE = ["#fbbf24", "#38bdf8", "#a78bfa", "#34d399", "#fb7185", "#a3e635", "#f472b6", "#94a3b8"] as const;

export const runColor = (index: number): string => PALETTE[index % PALETTE.length]!;
