/** What every upload format produces: rows in file order, each a JSON object, with where it came from. */
import type { RowError } from "./row-error";

export type TaskFileFormat = "jsonl" | "json" | "csv" | "tsv" | "parquet";

export interface ImportedRow {
  /** 1-based data row (header and blank lines not counted). */
  row: number;
  /** 1-based line where the row starts, for text formats. */
  line?: number;
  data: Record<string, unknown>;
}

export type ImportResult =
  | { ok: true; format: TaskFileFormat; rows: ImportedRow[]; columns: string[] }
  | {
      ok: false;
      /** Absent when the file was refused before its format mattered (too large, not UTF-8). */
      format?: TaskFileFormat;
      /** Capped at MAX_REPORTED_ERRORS, plus one entry saying how many more. */
      errors: RowError[];
      /** All errors found, listed or not. */
      errorCount: number;
    };
