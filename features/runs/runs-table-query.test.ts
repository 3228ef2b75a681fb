/**
 * The runs table's address ↔ filter mapping and the tag rules, without a database.
 *   npx vitest run --project unit features/runs/runs-table-query.test.ts
 */
import { describe, expect, it } from "vitest";
import { RunsListInput, RunUpdateInput, viewFromSearchParams, viewToListInput, viewToSearchParams } from "./runs-table-query";

describe("runs view in the address", () => {
  it("round-trips every filter and the sort", () => {
    const q = "experiment=e1&status=failed%2Cstopped&kind=dry-run&authorId=u1&tag=baseline&baseModel=Qwen%2FQ&from=2026-11-01T00%3A00%3A00.000Z&to=2026-11-03T00%3A00%3A00.000Z&q=lr+1e-5&flagged=1&sort=m%3Aeval_reward&dir=asc";
    const view = viewFromSearchParams(new URLSearchParams(q));
    expect(view).toEqual({
      experimentId: "e1",
      status: ["failed", "stopped"],
      kind: ["dry-run"],
      authorId: "u1",
      tag: "baseline",
      baseModel: "Qwen/Q",
      from: "2026-11-01T00:00:00.000Z",
      to: "2026-11-03T00:00:00.000Z",
      q: "lr 1e-5",
      flagged: true,
      sort: "m:eval_reward",
      dir: "asc",
    });
    expect(viewToSearchParams(view).toString()).toBe(q);
    const input = RunsListInput.parse(viewToListInput(view));
    expect(input.from).toEqual(new Date("2026-11-01T00:00:00.000Z"));
    expect(input.kind).toEqual(["dry-run"]);
  });

  it("drops what it does not understand, so a hand-edited link still opens", () => {
    const view = viewFromSearchParams(new URLSearchParams("status=failed,bogus&kind=x&from=yesterday&sort=m:bad%20key&dir=sideways&q=%20%20"));
    expect(view).toEqual({ status: ["failed"] });
    expect(viewToSearchParams({}).toString()).toBe("");
  });
});

describe("tags and notes rules", () => {
  it("trims, drops empties and duplicates; refuses more than 20 or longer than 40, naming the field", () => {
    expect(RunUpdateInput.parse({ id: "r", tags: [" a ", "a", "", "b"] }).tags).toEqual(["a", "b"]);
    const many = RunUpdateInput.safeParse({ id: "r", tags: Array.from({ length: 21 }, (_, i) => `t${i}`) });
    expect(many.error?.issues[0]?.message).toBe("tags: at most 20 tags");
    const long = RunUpdateInput.safeParse({ id: "r", tags: ["x".repeat(41)] });
    expect(long.error?.issues[0]?.message).toBe("tags: each tag is at most 40 characters");
    expect(RunUpdateInput.safeParse({ id: "r", notes: "n".repeat(10_001) }).error?.issues[0]?.message).toBe("notes: at most 10,000 characters");
  });
});
