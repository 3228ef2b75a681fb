/**
 * groupAdvantages against numbers printed by the trainer's own Python
 * (rollbook_engine.trainer.advantages.group_advantages), bit for bit. The golden numbers live in
 * fixtures/advantages.json, which the engine's tests/test_advantages_fixture.py checks the Python against too.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { groupAdvantages, groupTraining } from "./advantages";

interface AdvantageCase {
  case: string;
  rewards: number[];
  scale_rewards: boolean;
  advantages: (number | null)[] | null;
}

const golden = JSON.parse(readFileSync(new URL("./fixtures/advantages.json", import.meta.url), "utf8")) as {
  group_advantages: AdvantageCase[];
};

describe("groupAdvantages mirrors trainer/advantages.py (fixtures/advantages.json)", () => {
  it("the fixture has cases", () => {
    expect(golden.group_advantages.length).toBeGreaterThan(0);
  });

  it.each(golden.group_advantages)("$case", ({ rewards, scale_rewards, advantages }) => {
    expect(groupAdvantages(rewards, scale_rewards)).toEqual(advantages);
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
