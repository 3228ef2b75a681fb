/**
 * Maps stack frames of the bundled scripts back to the user's TypeScript. The bundles carry an inline
 * source map (esbuild, sourcesContent off); this decodes just enough of it (base64 VLQ "mappings") to turn
 * `scenario.js:42:11` into `scenario.ts:7:11`. A few dozen lines here beat a dependency for one lookup.
 */

/** One mapping segment: generated column → source index, line, column (all 0-based). */
type Segment = [genCol: number, source: number, line: number, col: number];

export interface DecodedMap {
  sources: string[];
  /** Segments per generated line (0-based), sorted by generated column. */
  lines: Segment[][];
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64_INDEX = new Map([...B64].map((c, i) => [c, i]));

function decodeVlq(segment: string): number[] {
  const out: number[] = [];
  let value = 0;
  let shift = 0;
  for (const ch of segment) {
    const digit = B64_INDEX.get(ch);
    if (digit === undefined) return out;
    value += (digit & 31) << shift;
    if (digit & 32) shift += 5;
    else {
      out.push(value & 1 ? -(value >>> 1) : value >>> 1);
      value = 0;
      shift = 0;
    }
  }
  return out;
}

/**
 * A bundle source as users should read it: their own files by their path in the experiment
 * ("lib/tools.ts"), the SDK runtime as "rollbook/…", zod as "zod/…".
 */
export function displaySource(source: string): string {
  const s = source.replace(/\\/g, "/");
  if (s.startsWith("experiment:")) return s.slice("experiment:".length);
  const sdk = /(?:^|\/)gpu-runner\/sdk\/runtime\/(.*)$/.exec(s);
  if (sdk) return `rollbook/${sdk[1]}`;
  const pkg = /(?:^|\/)node_modules\/(.*)$/.exec(s);
  if (pkg) return pkg[1]!;
  return s;
}

/** Decode the inline `//# sourceMappingURL=data:...;base64,` map of a script, or null if it has none. */
export function decodeInlineSourceMap(js: string): DecodedMap | null {
  const m = /\/\/# sourceMappingURL=data:application\/json;(?:charset=utf-8;)?base64,([A-Za-z0-9+/=]+)\s*$/.exec(js);
  if (!m?.[1]) return null;
  let raw: { sources?: unknown; mappings?: unknown };
  try {
    raw = JSON.parse(Buffer.from(m[1], "base64").toString("utf8")) as typeof raw;
  } catch {
    return null;
  }
  if (!Array.isArray(raw.sources) || typeof raw.mappings !== "string") return null;
  const sources = raw.sources.map((s) => displaySource(String(s)));
  let source = 0;
  let line = 0;
  let col = 0;
  const lines = raw.mappings.split(";").map((lineText) => {
    let genCol = 0;
    const segs: Segment[] = [];
    for (const segText of lineText.split(",")) {
      if (!segText) continue;
      const f = decodeVlq(segText);
      genCol += f[0] ?? 0;
      if (f.length < 4) continue;
      source += f[1] ?? 0;
      line += f[2] ?? 0;
      col += f[3] ?? 0;
      segs.push([genCol, source, line, col]);
    }
    return segs;
  });
  return { sources, lines };
}

/** 1-based generated position → 1-based `file:line:column` in the user's source, if mapped. */
export function mapPosition(map: DecodedMap, line: number, column: number): string | null {
  const segs = map.lines[line - 1];
  if (!segs || segs.length === 0) return null;
  let best: Segment | undefined;
  for (const s of segs) {
    if (s[0] <= column - 1) best = s;
    else break;
  }
  best ??= segs[0];
  if (!best) return null;
  const file = map.sources[best[1]];
  return file ? `${file}:${best[2] + 1}:${best[3] + 1}` : null;
}

/**
 * Rewrite a V8 stack from the isolate: frames in the bundles are mapped to the user's files, and frames of
 * the sandbox's own glue (and isolated-vm's boundary marker) are dropped, as they mean nothing to a user.
 */
export function mapStack(stack: string, maps: Record<string, DecodedMap | null>, hiddenFiles: readonly string[]): string {
  const out: string[] = [];
  for (const line of stack.split("\n")) {
    if (hiddenFiles.some((f) => line.includes(f)) || line.includes("<isolated-vm boundary>")) continue;
    let unmapped = false;
    const mapped = line.replace(/([\w.-]+\.js):(\d+):(\d+)/g, (whole, file: string, ln: string, col: string) => {
      const map = maps[file];
      const pos = map ? mapPosition(map, Number(ln), Number(col)) : null;
      if (map && !pos) unmapped = true;
      return pos ?? whole;
    });
    // A bundle position with no source mapping is esbuild's module wrapper, not a line the user wrote;
    // hidden files may only show up once a frame is mapped (the SDK's entry points).
    if (!(unmapped && /^\s+at /.test(line)) && !hiddenFiles.some((f) => mapped.includes(f))) out.push(mapped);
  }
  return out.join("\n");
}
