/** Small string helpers shared by the judges, written as loops so that no input can make them slow. */

/**
 * `s` without the leading characters found in `lead` and the trailing ones found in `trail`. (A regex
 * such as /[.]+$/ is quadratic on a long run of dots that does not reach the end; this is linear.)
 */
export function trimChars(s: string, lead: string, trail: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && lead.includes(s[start] as string)) start++;
  while (end > start && trail.includes(s[end - 1] as string)) end--;
  return start === 0 && end === s.length ? s : s.slice(start, end);
}
