/**
 * The runner's fair queue, with calls held open by hand (no engine, no timers): the order slots are handed
 * out in, the per-run cap, a cancelled call leaving the queue, and each rollout's clock pausing only while
 * it waits with nothing served.
 *   npx vitest run --project unit gpu-runner/src/engine/fair-queue.test.ts
 */
import { describe, expect, it } from "vitest";
import { RolloutClock } from "../sandbox/rollout-clock";
import { FairQueue, type FairCall } from "./fair-queue";
import { queuedChat } from "./queued-chat";

/** A queue of `capacity` slots where each call is a promise the test settles: `served` lists who got a slot. */
function harness(capacity: number) {
  const queue = new FairQueue(() => capacity);
  const served: string[] = [];
  const open = new Map<string, (() => void)[]>();
  const call = (runId: string, rollout: string, extra: Partial<FairCall> = {}) => {
    const name = `${runId}/${rollout}`;
    const done = queue.run({ runId, rolloutId: rollout, runCap: 100, ...extra }, () => {
      served.push(name);
      return new Promise<void>((resolve) => open.set(name, [...(open.get(name) ?? []), resolve]));
    });
    done.catch(() => {});
    return done;
  };
  /** Finish the oldest open call of `name`, and let the queue hand its slot on. */
  const finish = async (name: string) => {
    const resolvers = open.get(name);
    const resolve = resolvers?.shift();
    if (!resolve) throw new Error(`no open call of ${name}`);
    resolve();
    await flush();
  };
  return { queue, served, call, finish };
}

const flush = () => new Promise<void>((r) => setImmediate(r));

describe("FairQueue", () => {
  it("serves the rollout with nothing in flight before a looping sibling's next call", async () => {
    const h = harness(2);
    // The looper holds both slots and has two more calls waiting; then three siblings ask once each.
    for (let i = 0; i < 4; i++) void h.call("A", "loop");
    await flush();
    for (const r of ["r1", "r2", "r3"]) void h.call("A", r);
    await flush();
    expect(h.served).toEqual(["A/loop", "A/loop"]);
    await h.finish("A/loop");
    // The freed slot goes to a sibling (none in flight), not to the looper's older waiting calls.
    expect(h.served.slice(2)).toEqual(["A/r1"]);
    await h.finish("A/loop");
    // The looper has none in flight now either, and its calls waited longest; but r2 was never served.
    expect(h.served.slice(3)).toEqual(["A/r2"]);
    await h.finish("A/r1");
    expect(h.served.slice(4)).toEqual(["A/r3"]);
    await h.finish("A/r2");
    expect(h.served.slice(5)).toEqual(["A/loop"]);
    await h.finish("A/r3");
    expect(h.served.slice(6)).toEqual(["A/loop"]);
  });

  it("goes round-robin across runs before rollouts: a run with many rollouts does not crowd out one with few", async () => {
    const h = harness(1);
    void h.call("A", "a0");
    await flush();
    for (const r of ["a1", "a2", "a3"]) void h.call("A", r);
    void h.call("B", "b1");
    void h.call("B", "b2");
    await flush();
    for (let i = 0; i < 5; i++) await h.finish(h.served.at(-1) as string);
    expect(h.served).toEqual(["A/a0", "B/b1", "A/a1", "B/b2", "A/a2", "A/a3"]);
  });

  it("keeps a run within limits.max_run_inflight_calls while another run takes the free slots", async () => {
    const h = harness(4);
    for (const r of ["a1", "a2", "a3"]) void h.call("A", r, { runCap: 2 });
    await flush();
    expect(h.served).toEqual(["A/a1", "A/a2"]);
    expect(h.queue.status()).toEqual({ capacity: 4, in_flight: 2, waiting: 1 });
    void h.call("B", "b1");
    await flush();
    expect(h.served.at(-1)).toBe("B/b1"); // a free slot; A's waiting call is held by its run's cap
    await h.finish("A/a1");
    expect(h.served.at(-1)).toBe("A/a3");
  });

  it("drops a waiting call whose rollout ended, and hands the slot to the next", async () => {
    const h = harness(1);
    void h.call("A", "a1");
    await flush();
    const gone = new AbortController();
    const aborted = h.call("A", "a2", { signal: gone.signal });
    void h.call("A", "a3");
    await flush();
    gone.abort(new Error("the rollout has ended"));
    await expect(aborted).rejects.toThrow("the rollout has ended");
    expect(h.queue.status().waiting).toBe(1);
    await h.finish("A/a1");
    expect(h.served).toEqual(["A/a1", "A/a3"]);
    await h.finish("A/a3");
    expect(h.queue.status()).toEqual({ capacity: 1, in_flight: 0, waiting: 0 });
  });

  it("pauses a rollout's clock only while it waits with nothing of its own served", async () => {
    let now = 0;
    const clock = new RolloutClock(() => now);
    const changes: boolean[] = [];
    clock.onChange((paused) => changes.push(paused));
    const h = harness(1);
    void h.call("B", "other");
    await flush();
    now = 1_000;
    void h.call("A", "mine", { clock });
    await flush();
    expect(clock.paused).toBe(true);
    now = 5_000; // 4 s waiting for the slot B holds
    await h.finish("B/other");
    expect(clock.paused).toBe(false);
    // A second call that waits while the first is served does not pause it: the model works for this rollout.
    void h.call("B", "other");
    void h.call("A", "mine", { clock });
    await flush();
    expect(clock.paused).toBe(false);
    now = 8_000;
    expect(changes).toEqual([true, false]);
    expect(clock.queuedMs()).toBe(4_000);
    expect(clock.runningMs()).toBe(4_000);
  });
});

describe("queuedChat (a run's judge on the runner's engine)", () => {
  it("waits for a slot behind the calls already on the engine, then takes its turn", async () => {
    const h = harness(1);
    void h.call("run-a", "r0");
    const asked: string[] = [];
    const engine = { chat: async (body: { model: string }) => (asked.push(body.model), { model: body.model }) as never };
    const judge = queuedChat(engine, h.queue, { runId: "run-a", rolloutId: "judge", runCap: 100 });
    const answer = judge.chat({ model: "judge-model", messages: [] } as never);
    await flush();
    expect(asked).toEqual([]); // the one slot is r0's
    await h.finish("run-a/r0");
    await answer;
    expect(asked).toEqual(["judge-model"]);
  });
});
