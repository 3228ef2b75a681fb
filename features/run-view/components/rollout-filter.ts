/**
 * Which rollouts the run page's list shows: a filter that lives in the page's address (so a link such as
 * `?tab=rollouts&rollouts=id1,id2` or `?step=7` from a pathology flag selects exactly those rollouts), its
 * parsing and writing, and the matching itself. Pure, so it is unit-tested without a browser.
 *
 * Tags: trajectories carry no tags of their own, so a rollout's tags are derived from what it does carry:
 *   - the task's own `tags` (an array of strings) → each string, e.g. `hard`;
 *   - the task's short scalar fields (strings up to 40 characters, numbers, booleans) and those of a
 *     `metadata` object → `field=value`, e.g. `difficulty=hard`, `lang=fr`;
 *   - every metric the scenario or reward recorded itself (ctx.metric / reward components, not the runner's
 *     own counts) → `metric:<name>`, so one can find the rollouts where a metric was reported at all.
 */
import { ROLLOUT_ERROR_KINDS, type RolloutError } from "@contracts";
import { isWholeRollout, type Rollout, type WholeRollout } from "./run-state";

export type ErrorFilter = "any" | "ok" | "error" | RolloutError["kind"];
export const ERROR_KINDS: readonly RolloutError["kind"][] = ROLLOUT_ERROR_KINDS;

export interface RolloutFilter {
  /** Exactly these rollouts (a flag's link); null: no id restriction. */
  ids: readonly string[] | null;
  step: number | null;
  /** The train rollouts of these steps (a flag on trainer metrics links its steps: `steps=7,8`); null: any. */
  steps: readonly number[] | null;
  split: "all" | "train" | "val";
  /** Inclusive reward bounds; a rollout without a reward never matches a bound. */
  rewardMin: number | null;
  rewardMax: number | null;
  error: ErrorFilter;
  tag: string | null;
  /** Case-insensitive substring of any message, tool call, the task or the error message. */
  text: string;
}

/**
 * The server's answer to a text search (GET /api/runs/<id>/rollouts?q=…), for the rollouts whose messages
 * the page does not hold (the first load ships summaries): the seqs that matched. null: not answered yet.
 */
export interface TextMatches {
  /** The (trimmed, lower-cased) text it answers. */
  text: string;
  seqs: ReadonlySet<number>;
}

export const EMPTY_FILTER: RolloutFilter = {
  ids: null,
  step: null,
  steps: null,
  split: "all",
  rewardMin: null,
  rewardMax: null,
  error: "any",
  tag: null,
  text: "",
};

/** The URL parameters the filter owns; everything else in the address (tab, file, line…) is left alone. */
export const FILTER_PARAMS = ["rollouts", "step", "steps", "split", "reward_min", "reward_max", "error", "tag", "q"] as const;

function finiteOrNull(v: string | null): number | null {
  if (v === null || v.trim() === "") return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/** Read the filter from the address; malformed values are ignored (the filter is then off), never thrown. */
export function filterFromParams(params: URLSearchParams): RolloutFilter {
  const ids = params
    .get("rollouts")
    ?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const step = finiteOrNull(params.get("step"));
  const steps = (params.get("steps") ?? "")
    .split(",")
    .filter((v) => v.trim() !== "")
    .map(Number)
    .filter((n) => Number.isInteger(n) && n >= 0);
  const split = params.get("split");
  const error = params.get("error");
  return {
    ids: ids && ids.length > 0 ? ids : null,
    step: step !== null && Number.isInteger(step) && step >= 0 ? step : null,
    steps: steps.length > 0 ? steps : null,
    split: split === "train" || split === "val" ? split : "all",
    rewardMin: finiteOrNull(params.get("reward_min")),
    rewardMax: finiteOrNull(params.get("reward_max")),
    error: error === "ok" || error === "error" || (ERROR_KINDS as readonly string[]).includes(error ?? "") ? (error as ErrorFilter) : "any",
    tag: params.get("tag") || null,
    text: params.get("q") ?? "",
  };
}

/** Write the filter into a copy of `base` (other parameters kept; defaults left out so links stay short). */
export function filterToParams(filter: RolloutFilter, base: URLSearchParams = new URLSearchParams()): URLSearchParams {
  const out = new URLSearchParams(base);
  for (const p of FILTER_PARAMS) out.delete(p);
  if (filter.ids?.length) out.set("rollouts", filter.ids.join(","));
  if (filter.step !== null) out.set("step", String(filter.step));
  if (filter.steps?.length) out.set("steps", filter.steps.join(","));
  if (filter.split !== "all") out.set("split", filter.split);
  if (filter.rewardMin !== null) out.set("reward_min", String(filter.rewardMin));
  if (filter.rewardMax !== null) out.set("reward_max", String(filter.rewardMax));
  if (filter.error !== "any") out.set("error", filter.error);
  if (filter.tag) out.set("tag", filter.tag);
  if (filter.text) out.set("q", filter.text);
  return out;
}

export function isFilterActive(f: RolloutFilter): boolean {
  return (
    f.ids !== null || f.step !== null || f.steps !== null || f.split !== "all" || f.rewardMin !== null || f.rewardMax !== null || f.error !== "any" || f.tag !== null || f.text !== ""
  );
}

/** The runner's own per-rollout counts (docs/sdk.md): not tags, since every rollout has them. */
const RUNNER_METRICS = new Set(["turns", "tool_calls", "malformed_tool_calls", "tool_errors", "judge_tokens", "judge_cost_usd", "independent_reward"]);
const MAX_TAG_VALUE = 40;

function scalarTag(key: string, v: unknown): string | null {
  if (typeof v === "string") return v.length > 0 && v.length <= MAX_TAG_VALUE && !v.includes("\n") ? `${key}=${v}` : null;
  if (typeof v === "number" || typeof v === "boolean") return `${key}=${String(v)}`;
  return null;
}

const tagCache = new WeakMap<Rollout, readonly string[]>();

/** A rollout's tags (see the file's comment), cached per rollout object (rollouts are immutable). */
export function rolloutTags(r: Rollout): readonly string[] {
  const hit = tagCache.get(r);
  if (hit) return hit;
  const tags = new Set<string>();
  const task = r.task;
  if (task && typeof task === "object" && !Array.isArray(task)) {
    for (const [k, v] of Object.entries(task as Record<string, unknown>)) {
      if (k === "tags" && Array.isArray(v)) {
        for (const t of v) if (typeof t === "string" && t) tags.add(t);
      } else if (k === "metadata" && v && typeof v === "object" && !Array.isArray(v)) {
        for (const [mk, mv] of Object.entries(v as Record<string, unknown>)) {
          const t = scalarTag(mk, mv);
          if (t) tags.add(t);
        }
      } else if (k !== "split") {
        const t = scalarTag(k, v);
        if (t) tags.add(t);
      }
    }
  }
  for (const k of Object.keys(r.metrics)) if (!RUNNER_METRICS.has(k)) tags.add(`metric:${k}`);
  const out = [...tags];
  tagCache.set(r, out);
  return out;
}

/** Every tag in the run with how many rollouts carry it, most common first (the tag picker's options). */
export function tagCounts(rollouts: readonly Rollout[], max = 200): { tag: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const r of rollouts) for (const t of rolloutTags(r)) counts.set(t, (counts.get(t) ?? 0) + 1);
  return [...counts.entries()]
    .map(([tag, count]) => ({ tag, count }))
    .sort((a, b) => b.count - a.count || a.tag.localeCompare(b.tag))
    .slice(0, max);
}

const textCache = new WeakMap<Rollout, string>();

/** Everything a text search looks through, lower-cased once per rollout (one whose messages are on the page). */
export function searchableText(r: WholeRollout): string {
  const hit = textCache.get(r);
  if (hit !== undefined) return hit;
  const parts: string[] = [];
  for (const m of r.messages) {
    if (m.content) parts.push(m.content);
    for (const c of m.tool_calls ?? []) parts.push(c.function.name, c.function.arguments);
  }
  parts.push(typeof r.task === "string" ? r.task : JSON.stringify(r.task ?? null));
  if (r.error) parts.push(r.error.kind, r.error.message);
  const text = parts.join("\n").toLowerCase();
  textCache.set(r, text);
  return text;
}

/** The trimmed, lower-cased search text ("" when no text filter). */
export const searchText = (f: Pick<RolloutFilter, "text">): string => f.text.trim().toLowerCase();

/**
 * A rollout whose messages are on the page is searched here; any other by the server's answer (`matches`),
 * and matches nothing until that answer, for this text, has come.
 */
export function matchesFilter(
  r: Rollout,
  f: RolloutFilter,
  ids: ReadonlySet<string> | null = f.ids ? new Set(f.ids) : null,
  matches: TextMatches | null = null,
): boolean {
  if (ids && !ids.has(r.id)) return false;
  if (f.step !== null && r.step !== f.step) return false;
  if (f.steps && (r.split !== "train" || !f.steps.includes(r.step))) return false;
  if (f.split !== "all" && r.split !== f.split) return false;
  if (f.rewardMin !== null && (r.reward === null || r.reward < f.rewardMin)) return false;
  if (f.rewardMax !== null && (r.reward === null || r.reward > f.rewardMax)) return false;
  if (f.error === "ok" && r.error) return false;
  if (f.error === "error" && !r.error) return false;
  if (f.error !== "any" && f.error !== "ok" && f.error !== "error" && r.error?.kind !== f.error) return false;
  if (f.tag !== null && !rolloutTags(r).includes(f.tag)) return false;
  const q = searchText(f);
  if (q) {
    if (isWholeRollout(r)) return searchableText(r).includes(q);
    return matches !== null && matches.text === q && matches.seqs.has(r.seq);
  }
  return true;
}

export function filterRollouts(rollouts: readonly Rollout[], f: RolloutFilter, matches: TextMatches | null = null): Rollout[] {
  if (!isFilterActive(f)) return [...rollouts];
  const ids = f.ids ? new Set(f.ids) : null;
  return rollouts.filter((r) => matchesFilter(r, f, ids, matches));
}
