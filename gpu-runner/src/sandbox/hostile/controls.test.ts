/**
 * Controls for the hostile corpus: each attack the sandbox defends against, shown to work against a weaker
 * setup — node:vm, or isolated-vm used plainly in the runner's own process. If one of these ever stops
 * working (a Node or isolated-vm upgrade), the defence may be unneeded; if the corpus case ever starts
 * failing while its control still works, the defence broke.
 */
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import vm from "node:vm";
import ivm from "isolated-vm";
import { describe, expect, it } from "vitest";

const IVM_PATH = createRequire(import.meta.url).resolve("isolated-vm");

/** Run `body` in a fresh Node process with isolated-vm loaded as `ivm`. */
function inChild(body: string) {
  const code = `const ivm = require(${JSON.stringify(IVM_PATH)});\n(async () => {\n${body}\n})();`;
  return spawnSync(process.execPath, ["--no-node-snapshot", "-e", code], { encoding: "utf8", timeout: 60_000 });
}

describe("controls: the attacks work against a weaker setup", () => {
  it("constructor-escape: node:vm hands out the host's process (our isolate has none to give)", () => {
    expect(vm.runInNewContext(`this.constructor.constructor("return process")().pid`)).toBe(process.pid);
  });

  it("bridge-direct: a host function that returns an object hands the isolate a handle to it, and host values change", () => {
    // isolated-vm's default for an object a host function returns is an ivm.Reference. The sandbox's host
    // functions return nothing (log, metric) or one JSON string copied across (the rest).
    const isolate = new ivm.Isolate({ memoryLimit: 16 });
    try {
      const context = isolate.createContextSync();
      const hostState = { reward: 0 };
      context.global.setSync("__metric", new ivm.Reference(() => hostState));
      const r = context.evalSync(`const r = __metric.applySync(undefined, []); r.setSync("reward", 99); r.constructor.name`);
      expect(r).toBe("Reference");
      expect(hostState.reward).toBe(99);
    } finally {
      isolate.dispose();
    }
  });

  it("pollute-bridge: isolated-vm reads its options through the prototype chain, so Object.prototype changes a plain options object", async () => {
    const isolate = new ivm.Isolate({ memoryLimit: 16 });
    try {
      const context = await isolate.createContext();
      await context.global.set("__chat", new ivm.Reference(async () => "answer"));
      const call = (options: string) => `(async () => {
  const opts = ${options};
  Object.prototype.reference = true;
  try { return await __chat.apply(undefined, [], opts); } catch (e) { return "refused: " + e.message; } finally { delete Object.prototype.reference; }
})()`;
      const plain = `{ arguments: { copy: true }, result: { promise: true, copy: true } }`;
      expect(await context.eval(call(plain), { promise: true })).toMatch(/^refused: Only one of `copy`, `externalCopy`, or `reference` may be set/);
      // What bootstrap.ts does: option objects with no prototype.
      const hardened = `{ __proto__: null, arguments: { __proto__: null, copy: true }, result: { __proto__: null, promise: true, copy: true } }`;
      expect(await context.eval(call(hardened), { promise: true })).toBe("answer");
    } finally {
      isolate.dispose();
    }
  });

  it("wasm-memory: a WebAssembly.Memory grows far past an isolate's heap limit", () => {
    const isolate = new ivm.Isolate({ memoryLimit: 16 });
    try {
      const rss0 = process.memoryUsage().rss;
      const bytes = isolate
        .createContextSync()
        .evalSync(`const m = new WebAssembly.Memory({ initial: 1, maximum: 8192 }); m.grow(4095); new Uint8Array(m.buffer).fill(1); m.buffer.byteLength`);
      expect(bytes).toBe(256 * 1024 * 1024); // in an isolate limited to 16 MB
      expect(isolate.getHeapStatisticsSync().used_heap_size).toBeLessThan(16 * 1024 * 1024);
      expect(process.memoryUsage().rss - rss0).toBeGreaterThan(200 * 1024 * 1024);
    } finally {
      isolate.dispose();
    }
  });

  it("sab-atomics: Atomics.wait parks the isolate's thread until it is disposed, and counts as CPU time", async () => {
    const isolate = new ivm.Isolate({ memoryLimit: 16 });
    const context = await isolate.createContext();
    const waiting = context.eval(`Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)`).then(
      () => "returned",
      (e: Error) => e.message,
    );
    await new Promise((r) => setTimeout(r, 600));
    // A thread that only waits, measured as if it computed: it would be reported as a CPU timeout.
    expect(Number(isolate.cpuTime) / 1e6).toBeGreaterThan(400);
    isolate.dispose(); // what the wall clock does: it ends the wait
    expect(await waiting).toMatch(/disposed/);
  });

  it("giant-string-split: in the runner's own process, a fatal V8 error would end the runner", () => {
    const child = inChild(`const context = new ivm.Isolate({ memoryLimit: 64 }).createContextSync();
try { context.evalSync('let s = "xy"; for (let i = 0; i < 27; i++) s = s + s; s.split("").length'); } catch (e) { console.log("caught " + e.message); }
console.log("survived");`);
    expect(child.stdout).not.toContain("survived");
    expect(child.signal ?? child.status).not.toBe(0);
    expect(child.stderr).toContain("Fatal JavaScript invalid size error");
  });

  it("bridge functions never reject: an async host function that rejects ends the host process, even when the isolate catches it", () => {
    const child = inChild(`const context = await new ivm.Isolate({ memoryLimit: 16 }).createContext();
await context.global.set("f", new ivm.Reference(async () => { throw new Error("host rejects"); }));
console.log(await context.eval("f.apply(undefined, [], { result: { promise: true } }).catch(() => 'caught in the isolate')", { promise: true }));
await new Promise((r) => setTimeout(r, 200));
console.log("survived");`);
    expect(child.stdout).not.toContain("survived");
    expect(child.status).not.toBe(0);
    expect(child.stderr).toContain("host rejects");
  });
});
