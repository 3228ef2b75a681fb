/**
 * Axis tick labels: the short form, unless it makes neighbouring ticks look equal (probs_corr between 0.995
 * and 0.999); then as many decimals as the tick spacing needs.
 */
export function tickLabels(ticks: readonly number[], short: (v: number) => string): string[] {
  const labels = ticks.map(short);
  if (ticks.length < 2 || new Set(labels).size === labels.length) return labels;
  const spacing = Math.abs(ticks[1]! - ticks[0]!);
  const decimals = spacing > 0 ? Math.min(10, Math.max(0, Math.ceil(-Math.log10(spacing)))) : 2;
  return ticks.map((t) => t.toFixed(decimals));
}
