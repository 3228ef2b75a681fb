/** Any value as one line of text, for logs and messages: never throws, whatever user code handed over. */
export function show(v: unknown): string {
  if (typeof v === "string") return v;
  if (v instanceof Error) return typeof v.stack === "string" ? v.stack : String(v);
  try {
    const s = JSON.stringify(v);
    if (s !== undefined) return s;
  } catch {
    // cyclic, or a throwing toJSON: fall back to String
  }
  try {
    return String(v);
  } catch {
    return Object.prototype.toString.call(v);
  }
}
