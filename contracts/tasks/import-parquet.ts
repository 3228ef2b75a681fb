/**
 * Parquet (how Hugging Face stores datasets) → rows, with hyparquet: every row group, each row a plain
 * object. Values become what JSON can hold, since the rows end up in tasks.jsonl:
 *
 * - INT64 (a BigInt) → a number when it is a safe integer, else its decimal string (an exact id);
 * - dates and timestamps → ISO 8601 strings;
 * - NaN and ±Infinity → null (pandas writes NaN for a missing float);
 * - lists and structs → arrays and objects, converted the same way all the way down;
 * - binary values → a string when they are valid UTF-8 (strings without the STRING annotation, which
 *   some writers omit), else base64 (an image's bytes, for instance).
 *
 * hyparquet reads uncompressed and snappy files (pyarrow's and so Hugging Face's default); other codecs
 * are refused with a message saying how to re-save the file.
 */
import { parquetMetadata, parquetReadObjects } from "hyparquet";
import { MAX_TASK_ROWS, tooManyRowsMessage } from "./limits";
import { type RowErrorList } from "./row-error";
import type { ImportedRow } from "./import-types";

const utf8 = new TextDecoder("utf-8", { fatal: true });

function base64(bytes: Uint8Array): string {
  let binary = "";
  // In chunks: String.fromCharCode(...bytes) overflows the call stack on a large value.
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** A value hyparquet decoded → the JSON value stored for it (see the list above). */
export function toJsonValue(value: unknown): unknown {
  if (value === undefined || value === null) return null;
  switch (typeof value) {
    case "bigint":
      return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
    case "number":
      return Number.isFinite(value) ? value : null;
    case "string":
    case "boolean":
      return value;
    case "object":
      break;
    default:
      return String(value);
  }
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (value instanceof Uint8Array) {
    try {
      return utf8.decode(value);
    } catch {
      return base64(value);
    }
  }
  if (Array.isArray(value)) return value.map(toJsonValue);
  // Lists of numbers may arrive as typed arrays (Int32Array, BigInt64Array, Float64Array, …).
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    return Array.from(value as unknown as ArrayLike<unknown>, toJsonValue);
  }
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), toJsonValue(v)]));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toJsonValue(v)]));
}

export function hasParquetMagic(bytes: Uint8Array): boolean {
  const magic = [0x50, 0x41, 0x52, 0x31]; // "PAR1", at both ends of every Parquet file
  const n = bytes.length;
  return n >= 12 && magic.every((b, i) => bytes[i] === b && bytes[n - 4 + i] === b);
}

export async function importParquet(bytes: Uint8Array, errors: RowErrorList): Promise<ImportedRow[]> {
  if (!hasParquetMagic(bytes)) {
    errors.add({ message: "not a Parquet file (it does not start and end with PAR1); was it saved as CSV or JSON?" });
    return [];
  }
  // A copy that is exactly the file: `bytes` may be a view into a larger buffer.
  const buffer = bytes.slice().buffer;
  let metadata: ReturnType<typeof parquetMetadata>;
  try {
    metadata = parquetMetadata(buffer);
  } catch (e) {
    errors.add({ message: `cannot read the Parquet footer (${(e as Error).message}); the file may be truncated` });
    return [];
  }
  // Checked from the footer, before decoding: the limit is there so nothing that size is ever built.
  const total = Number(metadata.num_rows);
  if (total > MAX_TASK_ROWS) {
    errors.add({ message: tooManyRowsMessage(total) });
    return [];
  }

  let objects: Record<string, unknown>[];
  try {
    // utf8: false so unannotated binary is not forced through a lossy UTF-8 decode; toJsonValue decides.
    objects = await parquetReadObjects({ file: buffer, metadata, utf8: false });
  } catch (e) {
    const message = (e as Error).message;
    const codec = /unsupported compression codec: (\w+)/.exec(message)?.[1];
    errors.add({
      message: codec
        ? `the file is compressed with ${codec}, which cannot be read here; re-save it with snappy compression ` +
          `(pandas/pyarrow: compression="snappy") or as JSON Lines`
        : `cannot read the Parquet data (${message})`,
    });
    return [];
  }
  return objects.map((o, i) => ({ row: i + 1, data: toJsonValue(o) as Record<string, unknown> }));
}
