"use client";
/**
 * The rollout list's filters: split, step, reward range, error (any / none / any error / one kind), tag,
 * text search, and the ids a link selected. Controlled: the run page keeps the filter in its address.
 */
import { useEffect, useState } from "react";
import { ERROR_KINDS, EMPTY_FILTER, isFilterActive, type ErrorFilter, type RolloutFilter } from "./rollout-filter";

const control = "h-6 rounded border border-zinc-700 bg-zinc-900 px-1.5 text-[12px] text-zinc-200";

/** A number box that reports a value only when the text parses (an empty box means "no bound"). */
function NumberBox({ label, value, onChange, step, width = "w-16" }: { label: string; value: number | null; onChange: (v: number | null) => void; step?: number; width?: string }) {
  const [text, setText] = useState(value === null ? "" : String(value));
  // Follow changes from outside (clear, a link); leave the box alone while what it holds means the same.
  useEffect(() => {
    setText((t) => (t.trim() === "" ? null : Number(t)) === value ? t : value === null ? "" : String(value));
  }, [value]);
  const bad = text.trim() !== "" && !Number.isFinite(Number(text));
  return (
    <input
      aria-label={label}
      placeholder={label}
      inputMode="decimal"
      type="text"
      value={text}
      step={step}
      aria-invalid={bad}
      title={bad ? `${label}: not a number` : label}
      onChange={(e) => {
        setText(e.target.value);
        const t = e.target.value.trim();
        if (t === "") onChange(null);
        else if (Number.isFinite(Number(t))) onChange(Number(t));
      }}
      className={`${control} ${width} ${bad ? "border-red-600" : ""}`}
    />
  );
}

export function RolloutFilterBar({
  filter,
  onChange,
  steps,
  tags,
  shown,
  total,
}: {
  filter: RolloutFilter;
  onChange: (f: RolloutFilter) => void;
  steps: readonly number[];
  tags: readonly { tag: string; count: number }[];
  shown: number;
  total: number;
}) {
  const set = (patch: Partial<RolloutFilter>) => onChange({ ...filter, ...patch });
  return (
    <div className="flex shrink-0 flex-wrap items-center gap-2 border-b border-zinc-800 px-3 py-1.5 text-[12px] text-zinc-400" data-testid="rollout-filters">
      <input
        type="search"
        aria-label="Search rollouts"
        placeholder="Search text…"
        value={filter.text}
        onChange={(e) => set({ text: e.target.value })}
        className={`${control} w-40`}
      />
      <select aria-label="Split" value={filter.split} onChange={(e) => set({ split: e.target.value as RolloutFilter["split"] })} className={control}>
        <option value="all">train + eval</option>
        <option value="train">train</option>
        <option value="val">eval</option>
      </select>
      <select
        aria-label="Step"
        value={filter.step === null ? "" : String(filter.step)}
        onChange={(e) => set({ step: e.target.value === "" ? null : Number(e.target.value) })}
        className={control}
      >
        <option value="">all steps</option>
        {/* A linked step the run has not reached (yet) stays selectable, so the filter is visible. */}
        {(filter.step !== null && !steps.includes(filter.step) ? [...steps, filter.step] : steps).map((s) => (
          <option key={s} value={s}>
            step {s}
          </option>
        ))}
      </select>
      <span className="flex items-center gap-1">
        reward
        <NumberBox label="min reward" value={filter.rewardMin} onChange={(v) => set({ rewardMin: v })} />
        –
        <NumberBox label="max reward" value={filter.rewardMax} onChange={(v) => set({ rewardMax: v })} />
      </span>
      <select aria-label="Errors" value={filter.error} onChange={(e) => set({ error: e.target.value as ErrorFilter })} className={control}>
        <option value="any">errors: any</option>
        <option value="ok">no error</option>
        <option value="error">any error</option>
        {ERROR_KINDS.map((k) => (
          <option key={k} value={k}>
            error: {k}
          </option>
        ))}
      </select>
      <select aria-label="Tag" value={filter.tag ?? ""} onChange={(e) => set({ tag: e.target.value || null })} className={`${control} max-w-48`}>
        <option value="">all tags</option>
        {(filter.tag && !tags.some((t) => t.tag === filter.tag) ? [{ tag: filter.tag, count: 0 }, ...tags] : tags).map((t) => (
          <option key={t.tag} value={t.tag}>
            {t.tag} ({t.count})
          </option>
        ))}
      </select>
      {filter.ids && (
        <span data-testid="filter-ids" className="flex items-center gap-1 rounded bg-amber-950/60 px-1.5 py-0.5 text-amber-200 ring-1 ring-amber-800 ring-inset">
          {filter.ids.length} linked rollout{filter.ids.length === 1 ? "" : "s"}
          <button type="button" aria-label="Show all rollouts" className="text-amber-400 hover:text-amber-100" onClick={() => set({ ids: null })}>
            ✕
          </button>
        </span>
      )}
      {filter.steps && (
        <span data-testid="filter-steps" className="flex items-center gap-1 rounded bg-amber-950/60 px-1.5 py-0.5 text-amber-200 ring-1 ring-amber-800 ring-inset">
          train rollouts of step{filter.steps.length === 1 ? "" : "s"} {filter.steps.join(", ")}
          <button type="button" aria-label="Show every step" className="text-amber-400 hover:text-amber-100" onClick={() => set({ steps: null })}>
            ✕
          </button>
        </span>
      )}
      <span data-testid="rollout-count" className="text-zinc-500 tabular-nums">
        {shown === total ? `${total}` : `${shown} of ${total}`}
      </span>
      {isFilterActive(filter) && (
        <button type="button" onClick={() => onChange(EMPTY_FILTER)} className="text-zinc-500 underline decoration-zinc-700 underline-offset-2 hover:text-zinc-200">
          clear filters
        </button>
      )}
    </div>
  );
}
