"use client";
/**
 * The live rollout feed's state on the run page: the filter (kept in the address, so a link such as
 * `?tab=rollouts&rollouts=id1,id2` or `?step=7` opens the page filtered), the keyboard cursor (j / k),
 * the open transcript (click, Enter, o; Escape closes), newest-first order and "follow live", which keeps
 * the newest rollout in view — and open, when a transcript is open — as rollouts stream in.
 */
import { useCallback, useDeferredValue, useEffect, useMemo, useState } from "react";
import { EMPTY_FILTER, FILTER_PARAMS, filterFromParams, filterRollouts, filterToParams, searchText, tagCounts, type RolloutFilter } from "./rollout-filter";
import type { Rollout } from "./run-state";
import { useServerTextMatches } from "./whole-rollouts";

const isTyping = (t: EventTarget | null) => {
  const el = t as HTMLElement | null;
  return !!el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable);
};

export function useRolloutFeed(runId: string, rollouts: readonly Rollout[], search: URLSearchParams, keysActive: boolean) {
  const [filter, setFilterState] = useState<RolloutFilter>(() => filterFromParams(search));
  // The address can change under the open page (a flag link in the alerts bell to this run): follow it.
  const paramsKey = FILTER_PARAMS.map((p) => search.get(p) ?? "").join("|");
  const [seenKey, setSeenKey] = useState(paramsKey);
  if (paramsKey !== seenKey) {
    setSeenKey(paramsKey);
    setFilterState(filterFromParams(search));
  }
  const linkedIds = filter.ids;
  const [cursorId, setCursorId] = useState<string | null>(() => linkedIds?.[0] ?? null);
  const [openId, setOpenId] = useState<string | null>(() => (linkedIds?.length === 1 ? linkedIds[0]! : null));
  const [newestFirst, setNewestFirst] = useState(true);
  const [follow, setFollow] = useState(false);

  const setFilter = useCallback((f: RolloutFilter) => {
    setFilterState(f);
    const q = filterToParams(f, new URLSearchParams(window.location.search)).toString();
    window.history.replaceState(null, "", q ? `?${q}` : window.location.pathname);
  }, []);

  // Typing in the search box must not wait on filtering 10,000 rollouts: filter with the deferred text.
  const text = useDeferredValue(filter.text);
  const effective = useMemo(() => ({ ...filter, text }), [filter, text]);
  // Rollouts loaded as summaries are searched by the server (their messages are not on the page).
  const { matches, searching } = useServerTextMatches(runId, searchText(effective), rollouts);
  const visible = useMemo(() => {
    const list = filterRollouts(rollouts, effective, matches);
    return newestFirst ? list.reverse() : list;
  }, [rollouts, effective, matches, newestFirst]);

  const steps = useMemo(() => [...new Set(rollouts.map((r) => r.step))].sort((a, b) => a - b), [rollouts]);
  // Tags only change when rollouts arrive; count them lazily, not on every keystroke.
  const tags = useMemo(() => tagCounts(rollouts), [rollouts]);

  // Follow live: the newest visible rollout becomes the cursor (and the open one, if one is open).
  const newest = newestFirst ? visible[0] : visible[visible.length - 1];
  const newestId = newest?.id ?? null;
  const [followed, setFollowed] = useState<string | null>(null);
  if (follow && newestId && followed !== newestId) {
    // Adjusting state while rendering (React's documented alternative to an effect for derived state).
    setFollowed(newestId);
    setCursorId(newestId);
    if (openId) setOpenId(newestId);
  }

  const moveTo = useCallback((id: string) => setCursorId(id), []);
  const open = useCallback((id: string) => {
    setFollow(false);
    setCursorId(id);
    setOpenId(id);
  }, []);
  const close = useCallback(() => setOpenId(null), []);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (isTyping(e.target) || e.metaKey || e.ctrlKey || e.altKey) return;
      if (e.key === "Escape") {
        setOpenId(null);
        return;
      }
      if (!keysActive || visible.length === 0) return;
      if (e.key === "j" || e.key === "k") {
        e.preventDefault();
        setFollow(false);
        const i = visible.findIndex((r) => r.id === cursorId);
        const next = i < 0 ? 0 : e.key === "j" ? Math.min(visible.length - 1, i + 1) : Math.max(0, i - 1);
        const id = visible[next]!.id;
        setCursorId(id);
        // With a transcript open, it follows the cursor: j / k read rollout after rollout.
        if (openId) setOpenId(id);
      } else if ((e.key === "Enter" || e.key === "o") && cursorId && visible.some((r) => r.id === cursorId)) {
        e.preventDefault();
        setOpenId(cursorId);
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [visible, cursorId, openId, keysActive]);

  const selected = useMemo(() => (openId ? rollouts.find((r) => r.id === openId) : undefined), [openId, rollouts]);

  return {
    filter,
    setFilter,
    clearFilter: () => setFilter(EMPTY_FILTER),
    visible,
    /** A text search the server has not answered yet (the list may still grow). */
    searching,
    steps,
    tags,
    cursorId,
    openId,
    selected,
    moveTo,
    open,
    close,
    newestFirst,
    setNewestFirst,
    follow,
    setFollow,
  };
}
