/**
 * The runs table's query contract, written once and imported by the router (runs.list / runs.update), the
 * CSV export route and the runs page: the filters, the sort, the tag and note rules, and the mapping between
 * a filter and the page's address (?status=failed&tag=baseline&sort=m:eval_reward…), so a filtered view can
 * be shared as a link and exported as exactly the rows it shows. Imports zod only: safe in the browser.
 */
import { z } from "zod";
import { RunKind, RunStatus } from "@contracts";
import { multiLine, oneLine } from "@contracts/text-rules";

// The filterable values are the contracts' own enums, not a copy of them.
export const RUN_STATUSES = RunStatus.options;
export const RUN_KINDS = RunKind.options;

/** A key of Run.summary: what ingestion writes (run-summary.ts), checked before it reaches SQL as a parameter. */
export const SummaryKey = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,64}$/, "sort: a summary metric name is 1–64 letters, digits, '_', '.' or '-'");

/**
 * What the table can sort by: a column of the run, or `m:<key>` — any summary metric (the last step's
 * reward_mean, tokens_per_s…, the last eval's eval_reward). Runs without that metric sort last either way.
 */
export const RunsSort = z.union([
  z.enum(["createdAt", "number", "rewardMean"]),
  z.templateLiteral(["m:", z.string()]).refine((s) => SummaryKey.safeParse(s.slice(2)).success, {
    message: "sort: a summary metric name is 1–64 letters, digits, '_', '.' or '-'",
  }),
]);
export type RunsSort = z.infer<typeof RunsSort>;

export const RunsFilter = z.object({
  experimentId: z.string().min(1).max(100).optional(),
  status: z.array(z.enum(RUN_STATUSES)).max(RUN_STATUSES.length).optional(),
  kind: z.array(z.enum(RUN_KINDS)).max(RUN_KINDS.length).optional(),
  /** The user who started the run (Run.createdById). */
  authorId: z.string().min(1).max(100).optional(),
  tag: z.string().trim().min(1).max(40, "tag: at most 40 characters").optional(),
  baseModel: z.string().min(1).max(300).optional(),
  /** Created at or after (an instant; the page sends the start of the chosen local day). */
  from: z.coerce.date({ error: "from: a date" }).optional(),
  /** Created before (exclusive; the page sends the start of the day after the chosen one). */
  to: z.coerce.date({ error: "to: a date" }).optional(),
  /** Words, each matched as a prefix in the experiment's name, the run's tags or its notes; "#12" or "12" also matches run 12. */
  q: z.string().max(200, "q: at most 200 characters").optional(),
  /** Only runs with at least one pathology flag (features/flags/server/detect). */
  flagged: z.boolean().optional(),
});
export type RunsFilter = z.infer<typeof RunsFilter>;

export const RunsListInput = RunsFilter.extend({
  sort: RunsSort.default("createdAt"),
  dir: z.enum(["asc", "desc"]).default("desc"),
  limit: z.number().int().min(1).max(200).default(50),
  /** Opaque: the previous page's nextCursor (it holds the sort key and the last row's value and id). */
  cursor: z.string().max(1000).nullish(),
});
export type RunsListInput = z.input<typeof RunsListInput>;

/** The table's metric columns, in order, with their labels (any other summary key can still be sorted by). */
export const SUMMARY_COLUMNS: readonly { key: string; label: string; digits: number }[] = [
  { key: "reward_mean", label: "Reward (last step)", digits: 3 },
  { key: "eval_reward", label: "Eval reward", digits: 3 },
  { key: "exception_rate", label: "Exceptions", digits: 2 },
  { key: "tokens_per_s", label: "Tokens/s", digits: 0 },
];

export const MAX_TAGS = 20;
export const MAX_TAG_CHARS = 40;
export const MAX_NOTES_CHARS = 10_000;

/** Trimmed, empty ones dropped, duplicates dropped (first spelling kept), at most 20 of at most 40 characters. */
export const RunTags = z
  .array(oneLine(z.string().max(200, `tags: each tag is at most ${MAX_TAG_CHARS} characters`)))
  .max(200, `tags: at most ${MAX_TAGS} tags`)
  .transform((tags) => [...new Set(tags.map((t) => t.trim()).filter((t) => t.length > 0))])
  .pipe(
    z
      .array(z.string().max(MAX_TAG_CHARS, `tags: each tag is at most ${MAX_TAG_CHARS} characters`))
      .max(MAX_TAGS, `tags: at most ${MAX_TAGS} tags`),
  );

export const RunUpdateInput = z.object({
  id: z.string().min(1).max(100),
  tags: RunTags.optional(),
  notes: multiLine(z.string().max(MAX_NOTES_CHARS, `notes: at most ${MAX_NOTES_CHARS.toLocaleString("en-US")} characters`)).optional(),
});
export type RunUpdateInput = z.input<typeof RunUpdateInput>;

/** The list's sort and filters as they appear in the page's address (and the runs CSV export's). */
export interface RunsView extends Omit<RunsFilter, "from" | "to"> {
  from?: string;
  to?: string;
  sort?: RunsSort;
  dir?: "asc" | "desc";
}

const LIST_PARAMS = ["status", "kind"] as const;
const TEXT_PARAMS = ["authorId", "tag", "baseModel", "from", "to", "q"] as const;

/** Address → view. Unknown or malformed values are dropped (a hand-edited link still opens). */
export function viewFromSearchParams(params: URLSearchParams): RunsView {
  const view: RunsView = {};
  const experiment = params.get("experiment");
  if (experiment) view.experimentId = experiment;
  for (const key of LIST_PARAMS) {
    const allowed: readonly string[] = key === "status" ? RUN_STATUSES : RUN_KINDS;
    const values = params
      .getAll(key)
      .flatMap((v) => v.split(","))
      .filter((v) => allowed.includes(v));
    if (values.length > 0) (view as Record<string, unknown>)[key] = [...new Set(values)];
  }
  for (const key of TEXT_PARAMS) {
    const v = params.get(key);
    if (v && v.trim()) view[key] = v;
  }
  if (params.get("flagged") === "1") view.flagged = true;
  if (view.from && Number.isNaN(Date.parse(view.from))) delete view.from;
  if (view.to && Number.isNaN(Date.parse(view.to))) delete view.to;
  const sort = RunsSort.safeParse(params.get("sort"));
  if (sort.success && sort.data !== "createdAt") view.sort = sort.data;
  if (params.get("dir") === "asc") view.dir = "asc";
  return view;
}

/** View → address (only what differs from the default view). */
export function viewToSearchParams(view: RunsView): URLSearchParams {
  const p = new URLSearchParams();
  if (view.experimentId) p.set("experiment", view.experimentId);
  if (view.status?.length) p.set("status", view.status.join(","));
  if (view.kind?.length) p.set("kind", view.kind.join(","));
  for (const key of TEXT_PARAMS) {
    const v = view[key];
    if (v && v.trim()) p.set(key, v);
  }
  if (view.flagged) p.set("flagged", "1");
  if (view.sort && view.sort !== "createdAt") p.set("sort", view.sort);
  if (view.dir === "asc") p.set("dir", "asc");
  return p;
}

/** View → the list's input (runs.list and the CSV export page through the very same filter). */
export function viewToListInput(view: RunsView): Omit<z.input<typeof RunsListInput>, "limit" | "cursor"> {
  const { from, to, ...rest } = view;
  return { ...rest, ...(from ? { from: new Date(from) } : {}), ...(to ? { to: new Date(to) } : {}) };
}
