/**
 * GRPO group advantages, exactly as the trainer computes them — a line-for-line mirror of
 * gpu-runner/engine/rollbook_engine/trainer/advantages.py (`group_advantages`), plus the loop's rule that
 * decides which rollouts reach the trainer at all (gpu-runner/src/loop/run-loop.ts `trainStep`: only
 * rollouts with a training sample train, and a group needs two of them). Re-score uses it to show how an
 * edited reward would change what a step learns; fixtures/advantages.json holds numbers the Python gives,
 * which advantages.test.ts and the engine's tests/test_advantages_fixture.py check both sides against.
 *
 * Keep the arithmetic in the same order as the Python (sum left to right, mean, population std, then
 * (r - mean) / (std + eps)) so both sides agree to the last bit, not just approximately.
 */

/** Added to the group std before dividing (advantages.py STD_EPS). */
export const ADVANTAGE_STD_EPS = 1e-6;
/** Rewards are floats from user code: "equal" must survive mean arithmetic (advantages.py ZERO_TOL). */
export const ADVANTAGE_ZERO_TOL = 1e-9;

/**
 * Advantages of one submitted group: null for the whole group when its rewards have no variance (it
 * teaches nothing), else one per sample — null for a sample whose advantage is 0 (the trainer drops it).
 * `scaleRewards`: divide by the group std (GRPO); false leaves the centred reward (Dr.GRPO).
 */
export function groupAdvantages(rewards: readonly number[], scaleRewards: boolean): (number | null)[] | null {
  const n = rewards.length;
  if (n === 0) return null;
  let sum = 0;
  for (const r of rewards) sum += r;
  const mean = sum / n;
  let squares = 0;
  for (const r of rewards) {
    const d = r - mean;
    squares += d * d;
  }
  const std = Math.sqrt(squares / n);
  if (std <= ADVANTAGE_ZERO_TOL) return null;
  return rewards.map((r) => {
    let a = r - mean;
    if (scaleRewards) a = a / (std + ADVANTAGE_STD_EPS);
    return Math.abs(a) <= ADVANTAGE_ZERO_TOL ? null : a;
  });
}

/** One rollout of a training group as the loop sees it. */
export interface AdvantageMember {
  /** null when the rollout failed or was not scored. */
  reward: number | null;
  /** The rollout has a training sample (it made at least one model call and did not fail). */
  hasSample: boolean;
}

export interface GroupTraining {
  /** Per member, in order: its advantage, or null when it does not train (failed, dropped, or the group is untrainable). */
  advantages: (number | null)[];
  /** The group reaches the trainer with reward variance: it teaches something. */
  trainable: boolean;
}

/**
 * What one group of rollouts contributes to a training step: the loop submits only rollouts with a sample
 * and a finite reward, and only groups with at least two of them; the trainer then normalises within the group.
 */
export function groupTraining(members: readonly AdvantageMember[], scaleRewards: boolean): GroupTraining {
  const idx: number[] = [];
  members.forEach((m, i) => {
    if (m.hasSample && m.reward !== null && Number.isFinite(m.reward)) idx.push(i);
  });
  const advantages: (number | null)[] = members.map(() => null);
  if (idx.length < 2) return { advantages, trainable: false };
  const adv = groupAdvantages(
    idx.map((i) => members[i]!.reward as number),
    scaleRewards,
  );
  if (adv === null) return { advantages, trainable: false };
  idx.forEach((memberIndex, k) => {
    advantages[memberIndex] = adv[k] ?? null;
  });
  return { advantages, trainable: true };
}
