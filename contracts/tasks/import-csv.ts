/**
 * CSV / TSV → rows, with papaparse. The first row is the header (required: a task's fields need names).
 * papaparse's own dynamicTyping is not used: it types cell by cell, so one column can come out as numbers
 * on some rows and strings on others (and ISO dates turn into Date objects), which a zod schema then
 * rejects row by row. Columns are typed as a whole instead, as pandas and Hugging Face `datasets` do:
 *
 * - number: every non-empty cell is a JSON number ("3", "-0.5", "1e3"; not "007" or "1,000", and an
 *   integer beyond 2^53 keeps the column as text so ids stay exact);
 * - boolean: every non-empty cell is true or false (any case);
 * - otherwise text, exactly as written.
 *
 * An empty cell is null in a number or boolean column (there is no number for it) and "" in a text column
 * (CSV cannot tell "" from missing, and "" keeps z.string() fields valid). Cells holding JSON stay text.
 */
import Papa from "papaparse";
import { MAX_TASK_ROWS, tooManyRowsMessage } from "./limits";
import { type RowErrorList } from "./row-error";
import type { ImportedRow } from "./import-types";

interface RawRow {
  line: number;
  cells: string[];
  /** papaparse's complaints about this row (an unclosed quote), reported in row order with the rest. */
  problems: string[];
}

/** Splits the text into rows, each with the line it starts on (quoted fields may span lines). */
function readRows(text: string, delimiter: "," | "\t" | ""): RawRow[] {
  const rows: RawRow[] = [];
  let line = 1; // line at `scanned`
  let scanned = 0;
  // Lines up to `to`: papaparse gives each row's end offset (meta.cursor), not its line.
  const advance = (to: number) => {
    for (let i = text.indexOf("\n", scanned); i !== -1 && i < to; i = text.indexOf("\n", i + 1)) line++;
    scanned = Math.max(scanned, to);
  };
  Papa.parse<string[]>(text, {
    delimiter, // "" = let papaparse guess among , \t | ; (semicolon CSVs from European spreadsheets)
    header: false,
    skipEmptyLines: true,
    step: (result) => {
      // The row starts after the previous row's end and any blank lines papaparse skipped.
      let start = scanned;
      while (start < text.length && (text[start] === "\n" || text[start] === "\r")) start++;
      advance(start);
      const startLine = line;
      advance(result.meta.cursor);
      const problems = result.errors
        // A one-column file has no delimiter to detect; papaparse then reads it as one column, which is right.
        .filter((e) => e.code !== "UndetectableDelimiter")
        .map((e) => `${e.message} (${e.code})`);
      rows.push({ line: startLine, cells: result.data, problems });
    },
  });
  return rows;
}

const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const INTEGER = /^-?\d+$/;
const BOOLEAN = /^(true|false)$/i;

type ColumnType = "number" | "boolean" | "string";

function columnType(rows: readonly RawRow[], col: number): ColumnType {
  let numbers = true;
  let booleans = true;
  let any = false;
  for (const { cells } of rows) {
    const cell = (cells[col] ?? "").trim();
    if (cell === "") continue;
    any = true;
    if (numbers && !(NUMBER.test(cell) && (!INTEGER.test(cell) || Number.isSafeInteger(Number(cell))))) numbers = false;
    if (booleans && !BOOLEAN.test(cell)) booleans = false;
    if (!numbers && !booleans) return "string";
  }
  if (!any) return "string";
  return numbers ? "number" : booleans ? "boolean" : "string";
}

function typed(cell: string, type: ColumnType): unknown {
  if (type === "string") return cell;
  const t = cell.trim();
  if (t === "") return null;
  return type === "number" ? Number(t) : t.toLowerCase() === "true";
}

/** Rows of a CSV (delimiter guessed) or TSV text; problems go to `errors`. */
export function importDelimited(text: string, format: "csv" | "tsv", errors: RowErrorList): ImportedRow[] {
  const raw = readRows(text, format === "tsv" ? "\t" : "");
  const [header, ...body] = raw;
  if (!header) {
    errors.add({ message: "the file is empty: expected a header row with the column names, then one row per task" });
    return [];
  }
  if (body.length > MAX_TASK_ROWS) {
    errors.add({ message: tooManyRowsMessage(body.length) });
    return [];
  }

  for (const message of header.problems) errors.add({ line: header.line, message });
  const names = header.cells.map((c) => c.trim());
  const seen = new Map<string, number>();
  names.forEach((name, i) => {
    if (name === "") {
      errors.add({
        line: header.line,
        message: `column ${i + 1} has no name in the header row (a pandas index column? save with index=False)`,
      });
    } else if (seen.has(name)) {
      errors.add({ line: header.line, field: name, message: `column name used twice in the header (columns ${(seen.get(name) ?? 0) + 1} and ${i + 1})` });
    } else seen.set(name, i);
  });

  body.forEach(({ line, cells, problems }, i) => {
    for (const message of problems) errors.add({ row: i + 1, line, message });
    if (cells.length !== names.length) {
      errors.add({
        row: i + 1,
        line,
        message: `has ${cells.length} field${cells.length === 1 ? "" : "s"} but the header has ${names.length} (an unquoted ${format === "tsv" ? "tab" : "delimiter"} or quote in a value?)`,
      });
    }
  });
  if (errors.count > 0) return [];

  const types = names.map((_, col) => columnType(body, col));
  return body.map(({ line, cells }, i) => {
    // fromEntries defines keys, so a column named "__proto__" is a field, not the object's prototype.
    const data = Object.fromEntries(names.map((name, col) => [name, typed(cells[col] ?? "", types[col] ?? "string")]));
    return { row: i + 1, line, data };
  });
}
