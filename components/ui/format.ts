/** Small display helpers shared by the tables, cards and charts. */

export function fmtNum(v: number | null | undefined, digits = 3): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return "—";
  return v.toFixed(digits);
}

/**
 * A trainer signal (loss, KL) the same way everywhere it is shown: 3 decimals, or 3 significant digits in
 * exponent form when it is nonzero but below 0.001 — a GRPO loss of 1e-6 is not "0.000".
 */
export function fmtSignal(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return "—";
  return v !== 0 && Math.abs(v) < 1e-3 ? v.toExponential(2) : v.toFixed(3);
}

export function fmtSigned(v: number | null | undefined, digits = 3): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return "—";
  return `${v > 0 ? "+" : v < 0 ? "−" : "±"}${Math.abs(v).toFixed(digits)}`;
}

export function fmtInt(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return "—";
  return v.toLocaleString("en-US");
}

export function fmtMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m}m ${Math.round((ms % 60_000) / 1000)}s`;
}

export function toDate(d: Date | string | number | null | undefined): Date | null {
  if (d === null || d === undefined) return null;
  const date = d instanceof Date ? d : new Date(d);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** "12s ago", "5m ago", "3h ago", else a short date. */
export function fmtAgo(d: Date | string | number | null | undefined, now = Date.now()): string {
  const date = toDate(d);
  if (!date) return "—";
  const s = Math.max(0, Math.round((now - date.getTime()) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  return date.toLocaleDateString("en-US", { month: "short", day: "numeric", year: "numeric" });
}

export function fmtDateTime(d: Date | string | number | null | undefined): string {
  const date = toDate(d);
  if (!date) return "—";
  return date.toLocaleString("en-US", { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

export function fmtDuration(from: Date | string | number | null | undefined, to: Date | string | number | null | undefined): string {
  const a = toDate(from);
  const b = toDate(to);
  if (!a || !b || b.getTime() < a.getTime()) return "—";
  return fmtMs(b.getTime() - a.getTime());
}

/** Truncate long strings for tables and previews (the full text is one click away). */
export function truncate(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

/** Axis ticks: short enough for a 50 px axis, with enough significant digits to tell small values (a
 * loss of 2e-5, a KL of 1e-3) apart; below 1e-3 that means exponent notation. */
export function fmtAxisTick(v: number): string {
  if (!Number.isFinite(v)) return "";
  const a = Math.abs(v);
  if (a === 0) return "0";
  if (a >= 100) return v.toFixed(0);
  if (a >= 1) return v.toFixed(2);
  if (a < 1e-3) return v.toExponential(1);
  return String(Number(v.toPrecision(2)));
}

/** 1st, 2nd, 3rd, 4th … 11th, 12th, 13th, 21st. */
export function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" } as Record<number, string>)[n % 10] ?? "th";
  return `${n}${suffix}`;
}
