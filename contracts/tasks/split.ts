/**
 * Imported rows → train and validation, by a field of the rows or by a seeded ratio.
 *
 * By field: each row's value of `field` decides. Without `valValues`, the values Hugging Face and common
 * datasets use are recognised (any case): train, training → train; val, valid, validation, dev, test, eval,
 * evaluation → validation. "test" counts as validation because Rollbook has no third split, and training on
 * a test set is the worse mistake. Any other value is an error naming the row, so a typo is not trained on.
 * With `valValues`, rows whose value is one of them are validation and every other row is training. A row
 * without the field is an error either way (a misspelt field name would otherwise train on everything),
 * except for the reserved "split" field: Rollbook's own tasks.jsonl marks only validation rows
 * (`"split": "val"`) and leaves train rows without it, so there a row with no value (absent, null, or an
 * empty CSV cell) is training. Splitting by "split" consumes it; any other field stays in the task.
 *
 * By ratio: round(rows × val) rows, chosen by a seeded shuffle, are validation (same seed, same rows →
 * same split), but always leaving one training row. Rows keep their file order either way.
 */
import { mulberry32 } from "../random";
import { z } from "zod";
import { type RowError, RowErrorList } from "./row-error";
import { SPLIT_KEY } from "./parse-tasks";
import type { ImportedRow } from "./import-types";

export const DEFAULT_TRAIN_VALUES = ["train", "training"] as const;
export const DEFAULT_VAL_VALUES = ["val", "valid", "validation", "dev", "test", "eval", "evaluation"] as const;

export const SplitSpec = z.discriminatedUnion("by", [
  z.object({
    by: z.literal("field"),
    field: z.string().min(1).describe('The column that names each row\'s split, e.g. "split".'),
    valValues: z
      .array(z.union([z.string(), z.number(), z.boolean()]))
      .min(1)
      .optional()
      .describe("Values that make a row validation (strings in any case); every other value is training. Default: the common names, see DEFAULT_VAL_VALUES."),
  }),
  z.object({
    by: z.literal("ratio"),
    val: z.number().min(0).lt(1).describe("Fraction of rows for validation, e.g. 0.1; 0 puts every row in training."),
    seed: z.number().int().describe("Same seed and same rows give the same split."),
  }),
]);
export type SplitSpec = z.infer<typeof SplitSpec>;

export interface SplitRow extends ImportedRow {
  split: "train" | "val";
}

export type SplitResult =
  | { ok: true; rows: SplitRow[]; train: number; val: number }
  | { ok: false; errors: RowError[]; errorCount: number };

const norm = (v: unknown) => (typeof v === "string" ? v.trim().toLowerCase() : v);

/** Indices of the validation rows: the first k of a seeded Fisher–Yates shuffle. */
function pickVal(n: number, k: number, seed: number): Set<number> {
  const order = Array.from({ length: n }, (_, i) => i);
  const next = mulberry32(seed);
  for (let i = 0; i < k; i++) {
    const j = i + Math.floor(next() * (n - i));
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  return new Set(order.slice(0, k));
}

type Decision = "train" | "val" | { field: string; message: string };
type Decide = (data: Record<string, unknown>, index: number) => Decision;

/** By ratio: round(n × val) seeded picks, never all n. */
function byRatio(n: number, spec: Extract<SplitSpec, { by: "ratio" }>): Decide {
  const k = Math.max(0, Math.min(Math.round(n * spec.val), n - 1));
  const val = pickVal(n, k, spec.seed);
  return (_data, index) => (val.has(index) ? "val" : "train");
}

/** By field: the row's value, against valValues or the default names. */
function byField({ field, valValues }: Extract<SplitSpec, { by: "field" }>): Decide {
  const wanted = valValues?.map(norm);
  // tasks.jsonl's convention: a row without "split" is a training row (see parseTasks).
  const missingIsTrain = field === SPLIT_KEY;
  return (data) => {
    const value = data[field];
    const missing = value === undefined || value === null || (missingIsTrain && typeof value === "string" && value.trim() === "");
    if (missing) return missingIsTrain ? "train" : { field, message: "no value, so the row has no split" };
    const v = norm(value);
    if (wanted) return wanted.includes(v) ? "val" : "train";
    if ((DEFAULT_VAL_VALUES as readonly unknown[]).includes(v)) return "val";
    if ((DEFAULT_TRAIN_VALUES as readonly unknown[]).includes(v)) return "train";
    return {
      field,
      message:
        `${JSON.stringify(value)} is neither a training value (${DEFAULT_TRAIN_VALUES.join(", ")}) nor a validation value ` +
        `(${DEFAULT_VAL_VALUES.join(", ")}); choose which values are validation`,
    };
  };
}

export function applySplit(rows: readonly ImportedRow[], spec: SplitSpec): SplitResult {
  const errors = new RowErrorList();
  const fail = (): SplitResult => ({ ok: false, errors: errors.list(), errorCount: errors.count });
  const checked = SplitSpec.safeParse(spec);
  if (!checked.success) {
    errors.add({ message: `invalid split: ${checked.error.issues.map((i) => `${i.path.join(".") || "spec"}: ${i.message}`).join("; ")}` });
    return fail();
  }
  const s = checked.data;
  const consumesSplitKey = s.by === "field" && s.field === SPLIT_KEY;
  const decide = s.by === "ratio" ? byRatio(rows.length, s) : byField(s);

  // One pass in row order, so the capped error list keeps the first rows' errors whatever their kind.
  const out: SplitRow[] = [];
  rows.forEach((r, i) => {
    const where = { row: r.row, ...(r.line !== undefined ? { line: r.line } : {}) };
    let data = r.data;
    if (consumesSplitKey) {
      const { [SPLIT_KEY]: _consumed, ...rest } = data;
      data = rest;
    } else if (Object.hasOwn(data, SPLIT_KEY)) {
      // tasks.jsonl gives "split" its own meaning, so a row may carry it only when it is what we split by.
      errors.add({
        ...where,
        field: SPLIT_KEY,
        message: `"split" is reserved for the train/validation split; split by the field "split", or rename the column`,
      });
      return;
    }
    const decision = decide(r.data, i);
    if (typeof decision === "object") errors.add({ ...where, ...decision });
    else out.push({ ...r, data, split: decision });
  });

  if (errors.count > 0) return fail();
  const train = out.filter((r) => r.split === "train").length;
  if (train === 0) {
    errors.add({ message: `no training rows: all ${out.length} rows are validation; a run needs at least one training task` });
    return fail();
  }
  return { ok: true, rows: out, train, val: out.length - train };
}
