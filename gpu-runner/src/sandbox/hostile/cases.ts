/**
 * The hostile corpus: what each attack in ./corpus does, and what "fails safely" means for it — the error
 * its rollout must end with (kind and an honest message naming the limit), or, where the attack is harmless,
 * null: the rollout succeeds and the test checks that nothing leaked. The same table drives the unit test
 * (corpus.test.ts, a scripted model) and the runner-level test (hostile.servertest.ts, the real runner and
 * engine, every case as one task of one run).
 */
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { LimitsConfig, type RolloutError } from "../../../../contracts";

export interface HostileCase {
  /** The task's `case`: which attack the rollout makes. */
  case: string;
  where: "top level" | "lib/attacks.ts" | "tool execute" | "reward.ts" | "groupReward";
  attack: string;
  /** null: harmless, the rollout succeeds; else the error it must end with. */
  error: { kind: RolloutError["kind"]; message: RegExp } | null;
  /** For a harmless attack: what the scenario returns (toMatchObject), showing that nothing leaked. */
  output?: unknown;
}

/** The limits every corpus rollout runs under, in both tests. */
// The CPU limit counts CPU the sandbox process really got (watchdog.ts, cpuNs), so a loaded machine no longer
// turns the memory attacks into CPU timeouts. The other side of that: on a starved machine 4 s of CPU takes
// longer on the clock (six looping attacks at once on two cores that three test suites shared went past 30 s),
// and no case here is about the wall-clock limit, so it is far away.
export const CORPUS_LIMITS = LimitsConfig.parse({ rollout_timeout_ms: 120_000, cpu_timeout_ms: 4_000, memory_mb: 256 });

const CPU = {
  kind: "timeout",
  message: new RegExp(`^CPU timeout: user code ran for more than ${CORPUS_LIMITS.cpu_timeout_ms} ms of CPU time in one call \\(limits\\.cpu_timeout_ms\\)$`),
} as const;
const HEAP = { kind: "memory", message: /^out of memory: the rollout exceeded its heap limit of 256 MB \(limits\.memory_mb\)$/ } as const;
const V8_ENDED = (what: string) => ({ kind: "memory" as const, message: new RegExp(`^out of memory: V8 ended the sandbox process running this rollout \\(${what}.*limits\\.memory_mb`) });
const HEAP_OR_V8_ENDED = {
  kind: "memory" as const,
  message: new RegExp(`${HEAP.message.source}|${V8_ENDED("V8 ran out of memory").message.source}`),
};

export const HOSTILE_CASES: HostileCase[] = [
  {
    case: "top-level",
    where: "top level",
    attack: "looks for process/require and escapes through the Function constructor while the modules load",
    error: null,
    output: { process: "undefined", require: "undefined", module: "undefined", viaThisConstructor: "undefined", viaHostFunction: "undefined", bridgeRefsLeft: 0 },
  },
  {
    case: "constructor-escape",
    where: "lib/attacks.ts",
    attack: "x.constructor.constructor('return process') on ctx, ctx.chat, the task, an error, the bridge",
    error: null,
    output: { viaCtx: "undefined", viaChat: "undefined", viaTask: "undefined", viaHost: "undefined", viaError: "undefined" },
  },
  {
    case: "prepare-stack-trace",
    where: "lib/attacks.ts",
    attack: "Error.prepareStackTrace reading every frame's `this` while bridge calls fail",
    error: null,
    output: { stacks: 4, framesSeen: true, hostHandles: 0, hostPaths: 0 },
  },
  {
    case: "stack-trace-bomb",
    where: "lib/attacks.ts",
    attack: "a 1 MB error message with a prepareStackTrace returning 5 MB",
    error: { kind: "thrown", message: /^y{4000}… \(996000 more characters\)$/ },
  },
  {
    case: "pollute-bridge",
    where: "lib/attacks.ts",
    attack: "isolated-vm's transfer options (reference, result…) planted on Object.prototype, then chat/metric/log",
    error: null,
    output: { isHandle: false, role: "assistant", contentType: "string" },
  },
  { case: "getter-output", where: "lib/attacks.ts", attack: "returns getters and toJSON/valueOf traps", error: null, output: { counted: 1, trap: "toJSON ran in the isolate" } },
  { case: "cyclic-output", where: "lib/attacks.ts", attack: "returns a cyclic object", error: { kind: "thrown", message: /^TypeError: the scenario's return value is not JSON-serialisable/ } },
  {
    case: "huge-output",
    where: "lib/attacks.ts",
    attack: "returns a 2 MB string",
    error: { kind: "limit", message: /^the scenario's output is 2000002 characters of JSON; limits\.max_output_chars is 1000000$/ },
  },
  { case: "sab-atomics", where: "lib/attacks.ts", attack: "Atomics.wait on a SharedArrayBuffer", error: { kind: "thrown", message: /^ReferenceError: Atomics is not defined$/ } },
  { case: "wasm-memory", where: "lib/attacks.ts", attack: "grows a WebAssembly.Memory toward 4 GB (outside the heap)", error: { kind: "thrown", message: /^ReferenceError: WebAssembly is not defined$/ } },
  { case: "sync-loop", where: "lib/attacks.ts", attack: "for (;;) {}", error: CPU },
  { case: "async-loop", where: "lib/attacks.ts", attack: "for (;;) await null", error: CPU },
  { case: "microtask-storm", where: "lib/attacks.ts", attack: "a promise chain that never lets the microtask queue drain", error: CPU },
  { case: "deep-recursion", where: "lib/attacks.ts", attack: "unbounded recursion", error: { kind: "thrown", message: /^RangeError: Maximum call stack size exceeded$/ } },
  { case: "unbounded-allocation", where: "lib/attacks.ts", attack: "keeps 32 MB arrays forever", error: HEAP },
  { case: "giant-string-repeat", where: "lib/attacks.ts", attack: '"x".repeat(2 ** 30)', error: { kind: "thrown", message: /^RangeError: Invalid string length$/ } },
  { case: "giant-string-concat", where: "lib/attacks.ts", attack: "s = s + s, 31 times", error: { kind: "thrown", message: /^RangeError: Invalid string length$/ } },
  { case: "giant-string-split", where: "lib/attacks.ts", attack: "splits a 2^28-character rope into an array (a fatal V8 error: it ends the process)", error: V8_ENDED("a value past V8's size limits") },
  { case: "giant-strings-kept", where: "lib/attacks.ts", attack: "keeps distinct flat 16 MB strings", error: HEAP },
  // Which side notices first is a race: V8's catastrophic out-of-memory ends the process, or isolated-vm's heap
  // limit stops the isolate just before. Either way a memory error naming limits.memory_mb (seen both ways in CI).
  { case: "map-growth", where: "lib/attacks.ts", attack: "grows a Map until V8 gives up (catastrophic out-of-memory)", error: HEAP_OR_V8_ENDED },
  { case: "chat-flood", where: "lib/attacks.ts", attack: "10,000 ctx.chat promises at once, returns with some pending", error: null, output: { limitErrors: 9_900 } },
  { case: "calls-after-return", where: "lib/attacks.ts", attack: "returns while a loop keeps calling ctx.chat and a call is pending", error: null, output: "returned" },
  {
    case: "host-call-budget",
    where: "lib/attacks.ts",
    attack: "10,001 refused bridge calls in a loop",
    error: null,
    output: "LimitError: ctx.chat: this rollout has already made 10,000 model, judge and MCP calls (the sandbox's cap)",
  },
  {
    case: "bridge-direct",
    where: "lib/attacks.ts",
    attack: "__rollbook_host called with getters, proxies, cycles, BigInt, huge strings, 50 MB MCP args; overwriting it",
    error: null,
    output: {
      getterReads: 1,
      intact: true,
      results: {
        "getter-throws": "TypeError",
        "getter-switch": "ok",
        proxy: "TypeError",
        "non-plain": "TypeError",
        bigint: "TypeError",
        cyclic: "TypeError",
        "huge-content": "LimitError",
        "huge-name": "LimitError",
        "many-messages": "LimitError",
        "judge-options-getter": "TypeError",
        "judge-bad-options": "TypeError",
        "mcp-long-name": "TypeError",
        "mcp-50MB": "LimitError",
        "mcp-args-array": "TypeError",
        "log-throwing-toString": "threw Error",
        "log-symbol": "undefined",
        "metric-returns": "undefined",
        "metric-valueOf": "threw TypeError",
        "metric-long-name": "threw TypeError",
        "overwrite-host": "undefined",
        "redefine-host": "threw TypeError",
        "mutate-host": "undefined",
      },
    },
  },
  {
    case: "multi-megabyte-prompt",
    where: "lib/attacks.ts",
    attack: "ctx.chat with a 5 MB message",
    error: { kind: "limit", message: /^LimitError: ctx\.chat: the messages and options are 5,000,0\d\d characters as JSON; limits\.max_prompt_chars is 400,000$/ },
  },
  {
    case: "huge-tool-spec",
    where: "lib/attacks.ts",
    attack: "ctx.chat offering a tool with a 2 MB schema",
    error: { kind: "limit", message: /^LimitError: ctx\.chat: the messages and options are 2,000,\d{3} characters as JSON; limits\.max_prompt_chars is 400,000$/ },
  },
  {
    case: "mcp-huge-args",
    where: "lib/attacks.ts",
    attack: "ctx.mcp.call with a 50 MB argument",
    error: { kind: "limit", message: /^LimitError: ctx\.mcp\.call: the arguments are 50,000,011 characters of JSON; limits\.max_tool_args_chars is 100,000$/ },
  },
  { case: "log-flood", where: "lib/attacks.ts", attack: "100,000 ctx.log lines of 1 MB, then 1,000,000 console.log lines", error: null, output: "flooded" },
  { case: "metric-name-flood", where: "lib/attacks.ts", attack: "1,000 distinct ctx.metric names", error: { kind: "limit", message: /^LimitError: ctx\.metric: at most 64 metric names per rollout$/ } },
  { case: "metric-value-flood", where: "lib/attacks.ts", attack: "100,000 updates of one metric", error: null, output: "ok" },
  { case: "tool-execute", where: "tool execute", attack: "a tool whose execute never returns", error: CPU },
  {
    case: "eval-import",
    where: "lib/attacks.ts",
    attack: "eval, new Function, require() through the bundler's stub, import()",
    error: null,
    output: { requireType: "undefined", evalInIsolate: "2", functionProcess: "undefined", require: 'threw: Dynamic require of "node:fs" is not supported', import: "rejected: Not supported" },
  },
  { case: "reward-loop", where: "reward.ts", attack: "the reward function never returns", error: CPU },
  {
    case: "reward-getters",
    where: "reward.ts",
    attack: "a reward getter that throws when read twice; metrics a Proxy of 1,000 valueOf objects",
    error: { kind: "reward", message: /^the reward function returned more than 64 metrics$/ },
  },
  { case: "reward-valueof", where: "reward.ts", attack: "returns an object with valueOf/toString instead of a number", error: { kind: "reward", message: /^the reward function returned \{ reward: undefined \}; reward must be a finite number$/ } },
  { case: "reward-proxy", where: "reward.ts", attack: "returns a Proxy whose traps throw", error: { kind: "reward", message: /^the reward function threw: a trap fired in the reward's result$/ } },
  {
    case: "reward-huge-metric-name",
    where: "reward.ts",
    attack: "a metric named with 1,000,000 characters",
    error: { kind: "reward", message: /^the reward function returned a metric name of 1000000 characters; names are 1 to 100 characters$/ },
  },
  { case: "reward-mutates-input", where: "reward.ts", attack: "rewrites its messages and task, pollutes Object.prototype, samples the policy directly", error: null },
  // The runner prefixes a group reward's error with "groupReward failed: " on each rollout of the group.
  { case: "group-loop", where: "groupReward", attack: "groupReward never returns", error: { kind: "timeout", message: new RegExp(`^(groupReward failed: )?CPU timeout: user code ran for more than ${CORPUS_LIMITS.cpu_timeout_ms} ms`) } },
  {
    case: "group-proxy",
    where: "groupReward",
    attack: "returns an array Proxy claiming 1e9 rewards",
    error: { kind: "reward", message: /^(groupReward failed: )?groupReward returned more rewards than the group has rollouts \(1\)$/ },
  },
];

const CORPUS_DIR = path.join(import.meta.dirname, "corpus");

/** The corpus experiment's code files (scenario.ts, reward.ts, lib/*.ts) as an experiment's files map. */
export function corpusFiles(): Record<string, string> {
  const files: Record<string, string> = {};
  for (const f of ["scenario.ts", "reward.ts"]) files[f] = readFileSync(path.join(CORPUS_DIR, f), "utf8");
  for (const f of readdirSync(path.join(CORPUS_DIR, "lib"))) files[`lib/${f}`] = readFileSync(path.join(CORPUS_DIR, "lib", f), "utf8");
  return files;
}
