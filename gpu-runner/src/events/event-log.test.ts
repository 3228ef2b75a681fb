import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RunEvent } from "../../contracts";
import { EventLog, assertSafeRunId } from "./event-log";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-events-"));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

const log = (message: string) => ({ type: "run.log" as const, payload: { level: "info" as const, message } });
const finished = { type: "run.finished" as const, payload: { status: "completed" as const, error: null, diagnostics: [] } };

async function collect(it: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const e of it) out.push(e);
  return out;
}

describe("EventLog", () => {
  it("assigns seq 1,2,3…, persists each event as a valid JSON line", () => {
    const events = new EventLog(dir);
    events.begin("r1");
    const a = events.append("r1", log("a"));
    const b = events.append("r1", log("b"));
    expect([a.seq, b.seq]).toEqual([1, 2]);
    const lines = fs.readFileSync(path.join(dir, "r1", "events.jsonl"), "utf8").trim().split("\n");
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(RunEvent.safeParse(JSON.parse(line)).success).toBe(true);
    events.close();
  });

  it("resumes after seq N with no gap and no duplicate, stored then live, ending at run.finished", async () => {
    const events = new EventLog(dir);
    events.begin("r");
    for (let i = 0; i < 5; i++) events.append("r", log(`e${i}`));
    const sub = collect(events.subscribe("r", 3));
    // live events arrive while the subscriber is waiting
    await new Promise((r) => setTimeout(r, 10));
    events.append("r", log("live1"));
    await Promise.resolve();
    events.append("r", log("live2"));
    events.append("r", finished);
    const got = await sub;
    expect(got.map((e) => e.seq)).toEqual([4, 5, 6, 7, 8]);
    expect(got.at(-1)!.type).toBe("run.finished");
    events.close();
  });

  it("serves the same history after a reopen from events.jsonl", async () => {
    const first = new EventLog(dir);
    first.begin("r");
    for (let i = 0; i < 4; i++) first.append("r", log(`e${i}`));
    first.append("r", finished);
    first.close();

    const second = new EventLog(dir);
    expect(second.exists("r")).toBe(true);
    expect(second.lastSeq("r")).toBe(5);
    const all = await collect(second.subscribe("r", 0));
    expect(all.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    const after2 = await collect(second.subscribe("r", 2));
    expect(after2.map((e) => e.seq)).toEqual([3, 4, 5]);
    expect(after2[0]).toEqual(all[2]);
    // appending after reopening continues the numbering (a resumed run)
    second.begin("r");
    expect(second.append("r", log("resumed")).seq).toBe(6);
    second.close();
    expect(new EventLog(dir).lastSeq("r")).toBe(6);
  });

  it("drops a line torn by a crash mid-write and keeps appending cleanly", () => {
    const first = new EventLog(dir);
    first.append("r", log("a"));
    first.append("r", log("b"));
    first.close();
    fs.appendFileSync(path.join(dir, "r", "events.jsonl"), '{"run_id":"r","seq":3,"ty');
    const second = new EventLog(dir);
    expect(second.lastSeq("r")).toBe(2);
    expect(second.append("r", log("c")).seq).toBe(3);
    second.close();
    const third = new EventLog(dir);
    expect(third.events("r").map((e) => e.seq)).toEqual([1, 2, 3]);
  });

  it("many concurrent subscribers at different cursors each see a contiguous tail", async () => {
    const events = new EventLog(dir);
    events.begin("r");
    events.append("r", log("0"));
    const subs = [0, 1, 3, 7].map((after) => collect(events.subscribe("r", after)));
    for (let i = 1; i < 10; i++) {
      events.append("r", log(String(i)));
      if (i % 3 === 0) await new Promise((r) => setTimeout(r, 1));
    }
    events.append("r", finished);
    const results = await Promise.all(subs);
    [0, 1, 3, 7].forEach((after, k) => {
      const seqs = results[k]!.map((e) => e.seq);
      expect(seqs).toEqual(Array.from({ length: 11 - after }, (_, i) => after + 1 + i));
    });
    events.close();
  });

  it("stops a waiting subscriber when its signal aborts", async () => {
    const events = new EventLog(dir);
    events.begin("r");
    events.append("r", log("a"));
    const ac = new AbortController();
    const sub = collect(events.subscribe("r", 0, ac.signal));
    setTimeout(() => ac.abort(), 10);
    expect((await sub).map((e) => e.seq)).toEqual([1]);
    events.close();
  });

  it("refuses run ids that could escape the runs directory", () => {
    expect(() => assertSafeRunId("../x")).toThrow();
    expect(() => assertSafeRunId("a/b")).toThrow();
    expect(() => assertSafeRunId("a.b")).toThrow();
    expect(() => assertSafeRunId("run-1_aB")).not.toThrow();
  });
});
