/**
 * Deterministic seeds. Every sampling call and every shuffle derives its seed from the run seed and its
 * coordinates (step, group, rollout, turn), so re-running a run — or resuming it — samples the same way.
 * Never from the run's id: two runs of the same experiment, config and seed are the same experiment and
 * sample the same replies (config.seed's promise); another seed draws other samples.
 */
import { mulberry32 } from "../../../contracts/random";

/** FNV-1a over the parts, folded to a non-negative 31-bit integer (safe for every backend's seed). */
export function deriveSeed(...parts: (number | string)[]): number {
  let h = 0x811c9dc5;
  const text = parts.join("|");
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  // One round of a murmur finaliser spreads nearby inputs.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  return h & 0x7fffffff;
}

export { mulberry32 };

/** Fisher–Yates with a seeded PRNG: the same seed always gives the same order. */
export function seededShuffle<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  const rand = mulberry32(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
