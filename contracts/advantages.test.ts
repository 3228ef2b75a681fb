/**
 * groupAdvantages against numbers printed by the trainer's own Python
 * (rollbook_engine.trainer.advantages.group_advantages), bit for bit.
 */
import { describe, expect, it } from "vitest";
import { groupAdvantages, groupTraining } from "./advantages";

describe("groupAdvantages mirrors trainer/advantages.py", () => {
  it("GRPO (scaled by std + 1e-6) and Dr.GRPO (centred only); zero advantages dropped", () => {
    expect(groupAdvantages([1, 0, 0.5, 0.5], true)).toEqual([1.4142095623844086, -1.4142095623844086, null, null]);
    expect(groupAdvantages([1, 0, 0.5, 0.5], false)).toEqual([0.5, -0.5, null, null]);
    expect(groupAdvantages([2, 2, 2, 5], true)).toEqual([-0.5773498247455234, -0.5773498247455234, -0.5773498247455234, 1.7320494742365704]);
    expect(groupAdvantages([0.25, 1, 0, 0, 0.5, 0.125, 1, 0], true)).toEqual([
      -0.2718567973684552, 1.5923040988723804, -0.8932437627820671, -0.8932437627820671, 0.3495301680451567, -0.5825502800752611,
      1.5923040988723804, -0.8932437627820671,
    ]);
  });

  it("float noise counts as equal: (0.1+0.2+0.3)/3 centres the middle one at 0; [0.1+0.2, 0.3] has no variance", () => {
    expect(groupAdvantages([0.1, 0.2, 0.3], true)).toEqual([-1.224729871575299, null, 1.2247298715752981]);
    expect(groupAdvantages([0.1 + 0.2, 0.3], true)).toBeNull();
    expect(groupAdvantages([0.3, 0.3, 0.3], true)).toBeNull();
    expect(groupAdvantages([], true)).toBeNull();
  });
});

describe("groupTraining: what the loop submits", () => {
  it("only rollouts with a sample and a reward train; a group needs two of them", () => {
    const g = groupTraining(
      [
        { reward: 1, hasSample: true },
        { reward: null, hasSample: false },
        { reward: 0, hasSample: true },
        { reward: 0.5, hasSample: false },
      ],
      false,
    );
    expect(g).toEqual({ advantages: [0.5, null, -0.5, null], trainable: true });
    expect(groupTraining([{ reward: 1, hasSample: true }, { reward: 0, hasSample: false }], true)).toEqual({ advantages: [null, null], trainable: false });
    expect(groupTraining([{ reward: 1, hasSample: true }, { reward: 1, hasSample: true }], true)).toEqual({ advantages: [null, null], trainable: false });
  });
});
