import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { RunEvent } from "../../../contracts";
import { EventLog, LogBehindError, LogWriteError, assertSafeRunId } from "./event-log";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-events-"));
});
afterEach(() => {
  vi.restoreAllMocks();
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

/** An errno error as node's fs throws it. */
function errno(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${message}, write`), { code, errno: -28, syscall: "write" });
}

/**
 * The disk fills in the middle of a line: write(2) takes the first `fit` bytes (and they reach the file, as
 * on a real full disk), then the next write fails with ENOSPC.
 */
function diskFillsAfter(fit: number) {
  const real = fs.writeSync.bind(fs) as (...a: unknown[]) => number;
  let left = fit;
  return vi.spyOn(fs, "writeSync").mockImplementation(((fd: number, buffer: Buffer | string, ...rest: unknown[]) => {
    if (left <= 0) throw errno("ENOSPC", "no space left on device");
    const buf = typeof buffer === "string" ? Buffer.from(buffer) : buffer;
    const offset = typeof rest[0] === "number" ? rest[0] : 0;
    const length = typeof rest[1] === "number" ? rest[1] : buf.length - offset;
    const n = Math.min(left, length);
    left -= n;
    return real(fd, buf, offset, n);
  }) as typeof fs.writeSync);
}

describe("a write is complete or it did not happen", () => {
  it("a short write leaves the file and the log as they were: no seq consumed, nothing streamed", async () => {
    const events = new EventLog(dir);
    events.begin("r");
    events.append("r", log("a"));
    events.append("r", log("b"));
    const file = path.join(dir, "r", "events.jsonl");
    const before = fs.readFileSync(file);
    const seen: number[] = [];
    const ac = new AbortController();
    const sub = (async () => {
      for await (const e of events.subscribe("r", 2, ac.signal)) seen.push(e.seq);
    })();

    const spy = diskFillsAfter(17); // 17 bytes of the third line reach the disk, then it is full
    expect(() => events.append("r", log("c".repeat(200)))).toThrow(/no space left on device/i);
    spy.mockRestore();

    expect(fs.readFileSync(file).equals(before)).toBe(true); // cut back to where the line began
    expect(events.lastSeq("r")).toBe(2);
    expect(events.events("r").map((e) => e.seq)).toEqual([1, 2]);
    await new Promise((r) => setTimeout(r, 20));
    expect(seen).toEqual([]); // nobody was handed an event that is not on disk

    // Space again: the next event takes seq 3 (not 4), and the file holds whole lines only.
    expect(events.append("r", log("d")).seq).toBe(3);
    await new Promise((r) => setTimeout(r, 20));
    expect(seen).toEqual([3]);
    ac.abort();
    await sub;
    events.close();
    const lines = fs.readFileSync(file, "utf8").split("\n");
    expect(lines.at(-1)).toBe("");
    expect(lines.slice(0, -1).map((l) => (JSON.parse(l) as RunEvent).seq)).toEqual([1, 2, 3]);
  });

  it("a write that fails outright changes nothing either, and names the file and the reason", () => {
    const events = new EventLog(dir);
    events.append("r", log("a"));
    vi.spyOn(fs, "writeSync").mockImplementation(() => {
      throw errno("ENOSPC", "no space left on device");
    });
    let error: unknown;
    try {
      events.append("r", log("b"));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LogWriteError);
    expect((error as LogWriteError).code).toBe("ENOSPC");
    expect((error as Error).message).toContain(path.join("r", "events.jsonl"));
    expect(events.lastSeq("r")).toBe(1);
    events.close();
  });

  it("after a restart the next seq continues after the last whole line, never over a handed-out one", () => {
    const first = new EventLog(dir);
    first.append("r", log("a"));
    const spy = diskFillsAfter(30);
    expect(() => first.append("r", log("b".repeat(100)))).toThrow();
    spy.mockRestore();
    const handedOut = first.lastSeq("r");
    first.close();
    const second = new EventLog(dir);
    expect(second.lastSeq("r")).toBe(handedOut);
    expect(second.append("r", log("c")).seq).toBe(handedOut + 1);
    second.close();
  });
});

describe("loading a log", () => {
  it("cuts a last line that lacks its newline (its write never completed), so the next line starts clean", () => {
    const first = new EventLog(dir);
    first.append("r", log("a"));
    first.append("r", log("b"));
    first.close();
    const file = path.join(dir, "r", "events.jsonl");
    // A whole event but no newline: the write of `line + "\n"` stopped one byte short.
    const third = JSON.stringify({ run_id: "r", seq: 3, ts: 1, type: "run.log", payload: { level: "info", message: "c" } });
    fs.appendFileSync(file, third);
    const second = new EventLog(dir);
    expect(second.lastSeq("r")).toBe(2);
    expect(second.append("r", log("d")).seq).toBe(3);
    second.close();
    const reread = new EventLog(dir);
    expect(reread.events("r").map((e) => [e.seq, e.type === "run.log" ? e.payload.message : ""])).toEqual([
      [1, "a"],
      [2, "b"],
      [3, "d"],
    ]);
  });

  it("a damaged line in the middle is not cut with the whole lines after it: served up to it, never appended to", () => {
    const first = new EventLog(dir);
    for (const m of ["a", "b", "c"]) first.append("r", log(m));
    first.close();
    const file = path.join(dir, "r", "events.jsonl");
    const lines = fs.readFileSync(file, "utf8").split("\n");
    lines[1] = lines[1]!.slice(0, 10); // line 2 damaged, line 3 intact after it
    fs.writeFileSync(file, lines.join("\n"));
    const size = fs.statSync(file).size;
    const reopened = new EventLog(dir);
    expect(reopened.lastSeq("r")).toBe(1);
    expect(fs.statSync(file).size).toBe(size); // nothing cut: line 3 is still there
    expect(reopened.problem("r")).toMatch(/line 2 is not a whole JSON event/);
    expect(() => reopened.append("r", log("d"))).toThrow(/line 2/);
  });
});

describe("the high-water mark the web server holds", () => {
  it("a reader that already holds events past this log's end is told so, and the log numbers nothing below them", async () => {
    const events = new EventLog(dir);
    for (const m of ["a", "b", "c"]) events.append("r", log(m));
    // The web server stored up to seq 7 (this runner lost lines 4..7, e.g. in a crash before they reached the disk).
    const outcome = await Promise.race([
      collect(events.subscribe("r", 7)).then(
        () => "ended",
        (e: unknown) => e,
      ),
      new Promise((r) => setTimeout(() => r("waited silently (would skip whatever is numbered 4..7 next)"), 2_000)),
    ]);
    expect(outcome, "a reader ahead of the log is refused, not left waiting").toBeInstanceOf(Error);
    expect(outcome).toBeInstanceOf(LogBehindError);
    expect((outcome as Error).message).toMatch(/stored events up to seq 7 but this runner's event log ends at seq 3/);
    expect(() => events.append("r", log("d"))).toThrow(LogBehindError);
    expect(events.lastSeq("r")).toBe(3);
    // Handed back (the log replaced by the web server's copy, PUT /runs/<run>/events.jsonl): numbering goes on after 7.
    events.forget("r");
    fs.appendFileSync(
      path.join(dir, "r", "events.jsonl"),
      [4, 5, 6, 7].map((seq) => JSON.stringify({ run_id: "r", seq, ts: 1, type: "run.log", payload: { level: "info", message: `w${seq}` } }) + "\n").join(""),
    );
    expect(events.append("r", log("e")).seq).toBe(8);
    events.close();
  });
});
