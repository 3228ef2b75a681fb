/**
 * The token view's colour scales and per-rollout summary, as pure functions (token-scales.test.ts):
 *   - trained-on: trained / sampled but not trained / prompt (not sampled)
 *   - sampling or trainer logprob: a heat scale, pale where the model was sure, red where it was surprised
 *   - ratio exp(trainer − sampling): diverging around 1 (blue below, red above), |log ratio| over a
 *     threshold outlined — the inference–training mismatch GRPO's importance ratio corrects for
 * and, whatever the mode, a sampled token's role: scaffolding (tool-call markers, end of turn) or content.
 * Hand-written rather than d3-scale: four small mappings to CSS colours need no dependency.
 */
import type { RolloutToken } from "@contracts";

export type ColourMode = "trained" | "sampling" | "trainer" | "ratio";

export interface TokenStyle {
  /** CSS background colour, or undefined for none. */
  background?: string;
  /** Draw an outline: the ratio is past the threshold. */
  flagged: boolean;
  /** What the colour means, for screen readers and the legend. */
  label: string;
}

export const TRAINED_COLOURS = {
  trained: "rgba(16, 185, 129, 0.45)", // emerald
  sampled: "rgba(245, 158, 11, 0.40)", // amber: the model sampled it, training did not use it
  prompt: undefined,
} as const;

/** Logprobs at or below this saturate the heat scale (p ≈ 0.25 %). */
export const HEAT_FLOOR_LOGPROB = -6;

/** 0 (certain, logprob 0) … 1 (logprob ≤ HEAT_FLOOR_LOGPROB). */
export function heat(logprob: number): number {
  if (!Number.isFinite(logprob)) return 1;
  return Math.min(1, Math.max(0, logprob / HEAT_FLOOR_LOGPROB));
}

/** Yellow and faint for a likely token, through orange to strong red for an unlikely one. */
export function heatColour(logprob: number): string {
  const t = heat(logprob);
  const hue = Math.round(55 - 55 * t);
  const alpha = (0.12 + 0.68 * t).toFixed(2);
  return `hsla(${hue}, 90%, 50%, ${alpha})`;
}

/** |log ratio| at which the diverging scale saturates, as a multiple of the threshold. */
const RATIO_SATURATION = 2;

/** Blue below 1, red above, transparent at 1; full strength at RATIO_SATURATION × threshold. */
export function ratioColour(ratio: number, threshold: number): string | undefined {
  const lr = Math.log(ratio);
  if (!Number.isFinite(lr)) return "hsla(0, 85%, 50%, 0.85)";
  if (lr === 0) return undefined;
  const t = Math.min(1, Math.abs(lr) / (threshold * RATIO_SATURATION));
  const alpha = (0.08 + 0.77 * t).toFixed(2);
  return lr > 0 ? `hsla(0, 85%, 55%, ${alpha})` : `hsla(215, 85%, 55%, ${alpha})`;
}

export function isFlagged(ratio: number | null, threshold: number): boolean {
  return ratio !== null && !(Math.abs(Math.log(ratio)) <= threshold);
}

export function tokenStyle(token: RolloutToken, mode: ColourMode, threshold: number): TokenStyle {
  const flagged = isFlagged(token.ratio, threshold);
  switch (mode) {
    case "trained":
      if (token.trained) return { background: TRAINED_COLOURS.trained, flagged: false, label: "trained" };
      if (token.sampled) return { background: TRAINED_COLOURS.sampled, flagged: false, label: "sampled, not trained" };
      return { background: TRAINED_COLOURS.prompt, flagged: false, label: "prompt (not sampled)" };
    case "sampling":
      return token.sampling_logprob === null
        ? { flagged: false, label: "not sampled" }
        : { background: heatColour(token.sampling_logprob), flagged: false, label: `sampling logprob ${token.sampling_logprob.toFixed(3)}` };
    case "trainer":
      return token.trainer_logprob === null
        ? { flagged: false, label: "not trained" }
        : { background: heatColour(token.trainer_logprob), flagged: false, label: `trainer logprob ${token.trainer_logprob.toFixed(3)}` };
    case "ratio":
      return token.ratio === null
        ? { flagged: false, label: "no ratio (not trained)" }
        : { background: ratioColour(token.ratio, threshold), flagged, label: `ratio ${token.ratio.toFixed(4)}` };
  }
}

export interface TokenSummary {
  tokens: number;
  sampled: number;
  trained: number;
  /** Over trained tokens; null when none trained. */
  meanAbsLogRatio: number | null;
  maxRatio: number | null;
  minRatio: number | null;
  /** Tokens with |log ratio| over the threshold. */
  flagged: number;
  /** Pearson correlation of sampling vs trainer probabilities over trained tokens: this rollout's probs_corr. */
  correlation: number | null;
  /** Sampled tokens that were the tool format's scaffolding; null when the log has no roles (older runs). */
  scaffolding: number | null;
}

/** Pearson correlation, as the engine's loss.pearson: 1 for identical constants, 0 when only one is constant. */
export function pearson(x: readonly number[], y: readonly number[]): number | null {
  const n = x.length;
  if (n === 0 || n !== y.length) return null;
  const mx = x.reduce((a, b) => a + b, 0) / n;
  const my = y.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = x[i]! - mx;
    const dy = y[i]! - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  const denom = Math.sqrt(sxx * syy);
  if (denom === 0) return x.every((v, i) => Math.abs(v - y[i]!) <= 1e-12) ? 1 : 0;
  return sxy / denom;
}

export function summarise(tokens: readonly RolloutToken[], threshold: number): TokenSummary {
  const trained = tokens.filter((t) => t.trained && t.trainer_logprob !== null && t.sampling_logprob !== null && t.ratio !== null);
  const logRatios = trained.map((t) => Math.abs(t.trainer_logprob! - t.sampling_logprob!));
  const ratios = trained.map((t) => t.ratio!);
  return {
    tokens: tokens.length,
    sampled: tokens.filter((t) => t.sampled).length,
    trained: trained.length,
    meanAbsLogRatio: trained.length ? logRatios.reduce((a, b) => a + b, 0) / trained.length : null,
    maxRatio: ratios.length ? Math.max(...ratios) : null,
    minRatio: ratios.length ? Math.min(...ratios) : null,
    flagged: trained.filter((t) => isFlagged(t.ratio, threshold)).length,
    correlation: pearson(
      trained.map((t) => Math.exp(t.sampling_logprob!)),
      trained.map((t) => Math.exp(t.trainer_logprob!)),
    ),
    scaffolding: tokens.some((t) => t.role !== null) ? tokens.filter((t) => t.role === "scaffolding").length : null,
  };
}

/** "Content only" hides the sampled tokens that were scaffolding; prompt tokens, which have no role, stay. */
export function shown(token: RolloutToken, contentOnly: boolean): boolean {
  return !(contentOnly && token.role === "scaffolding");
}

/** A piece of token text: literal characters, or a whitespace character shown by a visible mark. */
export type TextPart = { kind: "text"; text: string } | { kind: "space" | "tab" | "newline" | "cr"; text: string };

const MARKS: Record<string, Exclude<TextPart["kind"], "text">> = { " ": "space", "\t": "tab", "\n": "newline", "\r": "cr" };

/** Splits a token's text so each space, tab, CR and newline can be drawn visibly (·, →, ␍, ↵ + a line break). */
export function textParts(text: string): TextPart[] {
  const out: TextPart[] = [];
  let run = "";
  for (const ch of text) {
    const kind = MARKS[ch];
    if (!kind) {
      run += ch;
      continue;
    }
    if (run) out.push({ kind: "text", text: run });
    run = "";
    out.push({ kind, text: ch });
  }
  if (run) out.push({ kind: "text", text: run });
  return out;
}
