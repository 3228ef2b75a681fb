"use client";
/** The clock, re-read every `ms`: a view that says "idle since …" or "3s ago" stays true between fetches. */
import { useEffect, useState } from "react";

export function useNow(ms: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
