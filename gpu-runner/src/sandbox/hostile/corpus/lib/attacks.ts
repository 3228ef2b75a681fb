// The scenario's attacks, one per task `case` (the expected outcome of each is in ../../cases.ts). They live
// in a lib/ file on purpose: user code reaches the sandbox through helpers as much as through scenario.ts.
import type { ChatMessage, RolloutContext } from "rollbook";
import { spinTool } from "./hostile-tool";
import { topLevelFindings } from "./top-level";

export interface Task {
  case: string;
  word?: string;
}
type Ctx = RolloutContext<Task>;

const g = globalThis as Record<string, any>;
declare const require: (name: string) => unknown;
declare const WebAssembly: { Memory: new (d: { initial: number; maximum: number }) => { grow(pages: number): number; buffer: ArrayBuffer } };

const name = (e: unknown) => (e instanceof Error ? e.name : typeof e);
function probe(f: () => unknown): string {
  try {
    return String(f());
  } catch (e) {
    return `threw ${name(e)}`;
  }
}
const user = (content: string): ChatMessage[] => [{ role: "user", content }];

export const SCENARIO_ATTACKS: Record<string, (ctx: Ctx) => Promise<unknown>> = {
  "top-level": async () => topLevelFindings,

  "constructor-escape": async (ctx) => {
    let viaError = "";
    try {
      (null as unknown as { toString(): string }).toString();
    } catch (e) {
      viaError = probe(() => (e as { constructor: { constructor: FunctionConstructor } }).constructor.constructor("return typeof process")());
    }
    return {
      viaCtx: probe(() => (ctx as unknown as { constructor: { constructor: FunctionConstructor } }).constructor.constructor("return typeof process")()),
      viaChat: probe(() => (ctx.chat as unknown as { constructor: FunctionConstructor }).constructor("return typeof require")()),
      viaTask: probe(() => (ctx.task as unknown as { constructor: { constructor: FunctionConstructor } }).constructor.constructor("return typeof module")()),
      viaHost: probe(() => g.__rollbook_host.log.constructor("return typeof Buffer")()),
      viaError,
      globals: Object.getOwnPropertyNames(globalThis).sort(),
    };
  },

  "prepare-stack-trace": async (ctx) => {
    const frames: string[] = [];
    (Error as unknown as { prepareStackTrace: unknown }).prepareStackTrace = (err: Error, sites: { getThis(): unknown; getFunctionName(): string | null }[]) => {
      for (const s of sites) {
        const self = s.getThis() as Record<string, unknown> | undefined;
        // An ivm.Reference (or any host handle) would show its methods here.
        const handle = self !== undefined && self !== null && (typeof self.applySync === "function" || typeof self.deref === "function" || typeof self.derefInto === "function");
        frames.push(handle ? "HOST HANDLE" : String(s.getFunctionName()));
      }
      return `${err.name}: ${err.message}`;
    };
    const stacks: string[] = [];
    const keep = (e: unknown) => stacks.push(String((e as Error).stack));
    try {
      await ctx.chat([{ role: "robot", content: "x" } as unknown as ChatMessage]); // refused by the runner
    } catch (e) {
      keep(e);
    }
    try {
      ctx.metric("", 1); // refused by the glue
    } catch (e) {
      keep(e);
    }
    try {
      g.__rollbook_host.log({ toString: () => { throw new Error("no string"); } });
    } catch (e) {
      keep(e);
    }
    try {
      (null as unknown as { x: number }).x = 1;
    } catch (e) {
      keep(e);
    }
    const hostPaths = stacks.filter((s) => /gpu-runner|node:internal|file:\/\/|\/work\//.test(s)).length;
    return { stacks: stacks.length, framesSeen: frames.length > 0, hostHandles: frames.filter((f) => f === "HOST HANDLE").length, hostPaths };
  },

  "stack-trace-bomb": async () => {
    (Error as unknown as { prepareStackTrace: unknown }).prepareStackTrace = () => "x".repeat(5_000_000);
    throw new Error("y".repeat(1_000_000));
  },

  "pollute-bridge": async (ctx) => {
    // isolated-vm's transfer options, planted on every object's prototype.
    const P = Object.prototype as Record<string, unknown>;
    Object.assign(P, { reference: true, externalCopy: true, result: { reference: true }, arguments: { reference: true }, timeout: 1 });
    const reply = await ctx.chat(user("Say hi"), { max_tokens: 4 });
    ctx.metric("polluted", 1);
    ctx.log("still logging");
    (ctx.task as { word?: string }).word = "mutated in the isolate";
    const isHandle = typeof (reply as unknown as Record<string, unknown>).applySync === "function" || typeof (reply as unknown as Record<string, unknown>).derefInto === "function";
    for (const k of ["reference", "externalCopy", "result", "arguments", "timeout"]) delete P[k];
    return { isHandle, role: reply.message.role, contentType: typeof reply.content };
  },

  "getter-output": async () => {
    let reads = 0;
    return {
      get counted() {
        reads++;
        return reads;
      },
      trap: { toJSON: () => "toJSON ran in the isolate", valueOf: () => { throw new Error("valueOf must not run"); } },
    };
  },

  "cyclic-output": async () => {
    const o: Record<string, unknown> = { a: 1 };
    o.self = o;
    return o;
  },

  "huge-output": async () => "x".repeat(2_000_000),

  "sab-atomics": async () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0),

  "wasm-memory": async () => {
    const m = new WebAssembly.Memory({ initial: 1, maximum: 65_536 });
    for (let i = 0; i < 64; i++) m.grow(1_000); // 4 GB, outside the heap limit, if wasm were there
    return m.buffer.byteLength;
  },

  "sync-loop": async () => {
    for (;;) {
      /* spin */
    }
  },

  "async-loop": async () => {
    for (;;) await null;
  },

  "microtask-storm": async () => {
    // Never returns to the event loop: each callback queues the next before the queue can drain.
    const spin = (): void => void Promise.resolve().then(spin);
    spin();
    return new Promise(() => {});
  },

  "deep-recursion": async () => {
    const down = (n: number): number => down(n + 1) + 1;
    return down(0);
  },

  "unbounded-allocation": async () => {
    const hoard: number[][] = [];
    for (let i = 0; ; i++) hoard.push(new Array(4_000_000).fill(i));
  },

  "giant-string-repeat": async () => "x".repeat(2 ** 30).length,

  "giant-string-concat": async () => {
    let s = "x";
    for (let i = 0; i < 31; i++) s = s + s;
    return s.length;
  },

  // A 2^28-character rope costs nothing to build; turning it into an array is a fatal error in V8.
  "giant-string-split": async () => {
    let s = "xy";
    for (let i = 0; i < 27; i++) s = s + s;
    return s.split("").length;
  },

  "giant-strings-kept": async () => {
    const kept: string[] = [];
    for (let i = 0; ; i++) {
      const s = "x".repeat(16_000_000) + i;
      s.indexOf("z"); // flattened: 16 MB of heap each
      kept.push(s);
    }
  },

  "map-growth": async () => {
    const m = new Map<number, number>();
    for (let i = 0; ; i++) m.set(i, i);
  },

  "chat-flood": async (ctx) => {
    const calls = Array.from({ length: 10_000 }, (_, i) => ctx.chat(user(String(i)), { max_tokens: 1 }).then(() => "ok", (e: unknown) => name(e)));
    // Beyond max_inflight_calls + the queue, every call is refused at once: wait for those only, and return
    // while the first ones are still pending — they must be cancelled, not left running.
    const refused = await Promise.all(calls.slice(100));
    return { limitErrors: refused.filter((n) => n === "LimitError").length };
  },

  "calls-after-return": async (ctx) => {
    const keepCalling = async () => {
      for (let i = 0; i < 1_000_000; i++) {
        try {
          await ctx.chat(user(`again ${i}`), { max_tokens: 1 });
        } catch {
          // refused once the scenario has returned; keep trying
        }
      }
    };
    void keepCalling();
    void ctx.chat(user("never awaited"), { max_tokens: 1 }).catch(() => {});
    return "returned";
  },

  "host-call-budget": async () => {
    // Refused requests (bad messages) cost the runner work too: they count against the per-rollout budget.
    let last = "";
    for (let i = 0; i < 10_001; i++) {
      const r = await g.__rollbook_host.chat([{ role: "robot" }], {});
      last = `${r.name}: ${r.message}`;
    }
    return last;
  },

  "bridge-direct": async () => {
    const host = g.__rollbook_host;
    const results: Record<string, string> = {};
    const run = async (label: string, f: () => unknown) => {
      try {
        const r = (await f()) as { ok?: boolean; name?: string } | undefined;
        results[label] = r && typeof r === "object" && "ok" in r ? (r.ok ? "ok" : String(r.name)) : typeof r;
      } catch (e) {
        results[label] = `threw ${name(e)}`;
      }
    };
    let getterReads = 0;
    const switching = { role: "user", get content() { getterReads++; return getterReads === 1 ? "hi" : "x".repeat(10_000_000); } };
    const cyclic: Record<string, unknown> = { role: "user" };
    cyclic.content = cyclic;
    const trap = new Proxy({}, { get: () => { throw new Error("trap"); }, ownKeys: () => { throw new Error("trap"); } });
    await run("getter-throws", () => host.chat([{ role: "user", get content() { throw new Error("getter"); } }], {}));
    await run("getter-switch", () => host.chat([switching], { max_tokens: 1 }));
    await run("proxy", () => host.chat(trap, {}));
    await run("non-plain", () => host.chat([new Map([["role", "user"]]), new Date(0), () => 1], {}));
    await run("bigint", () => host.chat([{ role: "user", content: 10n }], {}));
    await run("cyclic", () => host.chat([cyclic], {}));
    await run("huge-content", () => host.chat(user("x".repeat(5_000_000)), {}));
    await run("huge-name", () => host.chat([{ role: "user", content: "hi", name: "n".repeat(1_000_000) }], {}));
    await run("many-messages", () => host.chat(Array.from({ length: 100_000 }, () => ({ role: "user", content: "" })), {}));
    await run("judge-options-getter", () => host.judge(user("score"), { get temperature() { throw new Error("getter"); } }));
    await run("judge-bad-options", () => host.judge(user("score"), { model: "gpt-5", temperature: 9 }));
    await run("mcp-long-name", () => host.mcpCall("s".repeat(1_000_000), "t", {}));
    await run("mcp-50MB", () => host.mcpCall("files", "write", { blob: "x".repeat(50_000_000) }));
    await run("mcp-args-array", () => host.mcpCall("files", "write", [1, 2, 3]));
    await run("log-throwing-toString", () => host.log({ toString: () => { throw new Error("no"); } }));
    await run("log-symbol", () => host.log(Symbol("s")));
    await run("metric-returns", () => host.metric("fine", 1));
    await run("metric-valueOf", () => host.metric("m", { valueOf: () => 1 }));
    await run("metric-long-name", () => host.metric("m".repeat(1_000), 1));
    await run("overwrite-host", () => { g.__rollbook_host = {}; });
    await run("redefine-host", () => Object.defineProperty(globalThis, "__rollbook_host", { value: {} }));
    await run("mutate-host", () => { host.chat = () => "mine"; });
    const intact = g.__rollbook_host === host && Object.isFrozen(host) && host.chat.length === 2;
    return { results, getterReads, intact };
  },

  "multi-megabyte-prompt": async (ctx) => ctx.chat(user("x".repeat(5_000_000))),

  "huge-tool-spec": async (ctx) =>
    ctx.chat(user("use the tool"), { tools: [{ type: "function", function: { name: "t", parameters: { type: "object", description: "x".repeat(2_000_000) } } }] }),

  "mcp-huge-args": async (ctx) => ctx.mcp.call("files", "write", { blob: "x".repeat(50_000_000) }),

  "log-flood": async (ctx) => {
    const big = "y".repeat(1_000_000);
    for (let i = 0; i < 100_000; i++) ctx.log(big);
    for (let i = 0; i < 1_000_000; i++) console.log("line", i);
    return "flooded";
  },

  "metric-name-flood": async (ctx) => {
    for (let i = 0; i < 1_000; i++) ctx.metric(`name_${i}`, i);
    return "not reached";
  },

  "metric-value-flood": async (ctx) => {
    for (let i = 0; i < 100_000; i++) ctx.metric("x", i);
    return "ok";
  },

  "tool-execute": async (ctx) => {
    const parsed = spinTool.parseArguments('{"n": 1}');
    if (!parsed.ok) return parsed.error;
    return spinTool.execute(parsed.args, { ctx, toolCallId: "c1" });
  },

  "eval-import": async () => {
    const specifier = ["node", "fs"].join(":");
    const out: Record<string, string> = {
      requireType: typeof g.require,
      evalInIsolate: String(eval("1 + 1")),
      functionProcess: String(new Function("return typeof process")()),
    };
    try {
      out.require = String(require(specifier));
    } catch (e) {
      out.require = `threw: ${(e as Error).message}`;
    }
    try {
      await import(specifier);
      out.import = "imported";
    } catch (e) {
      out.import = `rejected: ${(e as Error).message}`;
    }
    return out;
  },
};
