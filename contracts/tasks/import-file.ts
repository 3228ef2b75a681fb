/**
 * An uploaded file → task rows, all or nothing: the result holds every row, or the errors and no rows, so
 * a file with one bad row in 10,000 is never half-imported. The format comes from the extension; a file
 * without a known one is sniffed (Parquet magic bytes, a leading "[" or "{", else delimited text).
 */
import { MAX_TASKS_BYTES, tooLargeMessage } from "./limits";
import { RowErrorList } from "./row-error";
import { parseJsonLines } from "./json-lines";
import { importJson } from "./import-json";
import { importDelimited } from "./import-csv";
import { hasParquetMagic, importParquet } from "./import-parquet";
import type { ImportResult, ImportedRow, TaskFileFormat } from "./import-types";

export interface TaskFile {
  /** The file's name as uploaded; its extension picks the format, and errors name it. */
  name: string;
  bytes: Uint8Array;
}

const BY_EXTENSION: Record<string, TaskFileFormat> = {
  jsonl: "jsonl",
  ndjson: "jsonl",
  jsonlines: "jsonl",
  json: "json",
  csv: "csv",
  tsv: "tsv",
  tab: "tsv",
  parquet: "parquet",
  pq: "parquet",
};

/** Formats people try that are not tabular text or Parquet: say what to do instead of a garbled parse. */
const UNSUPPORTED: Record<string, string> = {
  gz: "a compressed file; decompress it first",
  zip: "a zip archive; extract the data file first",
  bz2: "a compressed file; decompress it first",
  xz: "a compressed file; decompress it first",
  zst: "a compressed file; decompress it first",
  xlsx: "an Excel workbook; save the sheet as CSV (UTF-8) first",
  xls: "an Excel workbook; save the sheet as CSV (UTF-8) first",
  arrow: "an Arrow file; save it as Parquet or JSON Lines first",
};

export const TASK_FILE_EXTENSIONS = Object.keys(BY_EXTENSION).map((e) => `.${e}`);

function extension(name: string): string {
  const dot = name.lastIndexOf(".");
  return dot === -1 ? "" : name.slice(dot + 1).toLowerCase();
}

/** The format of an upload: by extension, else by its first bytes. */
export function detectTaskFileFormat(file: TaskFile): TaskFileFormat {
  const byName = BY_EXTENSION[extension(file.name)];
  if (byName) return byName;
  if (hasParquetMagic(file.bytes)) return "parquet";
  // First non-whitespace byte (after a UTF-8 BOM): "[" or "{" is JSON or JSON Lines; importJson tells which.
  let i = file.bytes[0] === 0xef && file.bytes[1] === 0xbb && file.bytes[2] === 0xbf ? 3 : 0;
  while (i < file.bytes.length && [0x20, 0x09, 0x0a, 0x0d].includes(file.bytes[i] as number)) i++;
  const first = file.bytes[i];
  return first === 0x5b || first === 0x7b ? "json" : "csv";
}

function columnsOf(rows: readonly ImportedRow[]): string[] {
  const seen = new Set<string>();
  for (const { data } of rows) for (const key of Object.keys(data)) seen.add(key);
  return [...seen];
}

export async function importTaskFile(file: TaskFile): Promise<ImportResult> {
  const errors = new RowErrorList();
  const fail = (format?: TaskFileFormat): ImportResult => ({
    ok: false,
    ...(format ? { format } : {}),
    errors: errors.list(),
    errorCount: errors.count,
  });

  if (file.bytes.byteLength > MAX_TASKS_BYTES) {
    errors.add({ message: tooLargeMessage(file.bytes.byteLength) });
    return fail();
  }
  const unsupported = UNSUPPORTED[extension(file.name)];
  if (unsupported) {
    errors.add({ message: `this is ${unsupported}. Accepted: JSON Lines, JSON, CSV, TSV or Parquet` });
    return fail();
  }

  let format = detectTaskFileFormat(file);
  let rows: ImportedRow[];
  if (format === "parquet") {
    rows = await importParquet(file.bytes, errors);
  } else {
    let text: string;
    try {
      // fatal: a Latin-1 or UTF-16 file is refused, not silently turned into mojibake; the BOM is dropped.
      text = new TextDecoder("utf-8", { fatal: true }).decode(file.bytes);
    } catch {
      errors.add({ message: "the file is not UTF-8 text; save it as UTF-8 (Excel: \"CSV UTF-8\")" });
      return fail(format);
    }
    if (format === "jsonl") rows = parseJsonLines(text, errors, { withRow: true });
    else if (format === "json") ({ format, rows } = importJson(text, errors));
    else rows = importDelimited(text, format, errors);
  }

  if (errors.count > 0) return fail(format);
  if (rows.length === 0) {
    errors.add({ message: "the file has no rows" });
    return fail(format);
  }
  return { ok: true, format, rows, columns: columnsOf(rows) };
}
