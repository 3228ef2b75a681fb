/**
 * The hostile corpus (cases.ts) against the real sandbox: real esbuild and TypeScript, real sandbox
 * processes and isolates. Every case runs once, all of them together with ordinary rollouts in between
 * (six at a time, as a run would), and each test then checks its case: the error it ended with, or — for
 * a harmless attack — its output and what the runner's side saw (calls, aborts, the task, the transcript).
 * The only stand-in is the model (the RolloutHost), scripted here.
 */
import ivm from "isolated-vm";
import { beforeAll, describe, expect, it } from "vitest";
import type { ChatMessage } from "../../../../contracts";
import type { ChatResult } from "../../../../contracts/sdk/rollbook";
import { mapConcurrent } from "../../loop/pool";
import { type CompiledExperiment, compileExperiment } from "../../experiment/compile";
import { REMOVED_GLOBALS } from "../bootstrap";
import { runGroupReward, type GroupRewardOutcome } from "../run-group";
import { type RolloutHost, type RolloutOutcome, runRollout } from "../run-rollout";
import { CORPUS_LIMITS, HOSTILE_CASES, type HostileCase, corpusFiles } from "./cases";

const reply = (content: string): ChatResult => ({
  content,
  finishReason: "stop",
  toolCalls: [],
  malformedToolCalls: [],
  message: { role: "assistant", content },
  usage: { promptTokens: 3, completionTokens: 1 },
});

/** The runner's side as a test sees it: every call the host got, how many were in flight, which were aborted. */
function recordingHost(answer: "now" | "never") {
  const seen = { chats: [] as ChatMessage[][], judges: 0, mcpCalls: 0, inFlight: 0, peak: 0, aborted: 0 };
  const transcript: ChatMessage[] = [];
  const host: RolloutHost = {
    chat: (messages, _options, signal) => {
      seen.chats.push(messages);
      if (answer === "now") {
        transcript.push(...messages, { role: "assistant", content: "Apple." });
        return Promise.resolve(reply("Apple."));
      }
      seen.inFlight++;
      seen.peak = Math.max(seen.peak, seen.inFlight);
      return new Promise((_, reject) =>
        signal.addEventListener("abort", () => {
          seen.inFlight--;
          seen.aborted++;
          reject(signal.reason as Error);
        }),
      );
    },
    judge: async () => {
      seen.judges++;
      return { content: "SCORE: 1", usage: { promptTokens: 1, completionTokens: 1, costUsd: 0 } };
    },
    mcpList: async () => [],
    mcpCall: async () => {
      seen.mcpCalls++;
      return { text: "", isError: false };
    },
  };
  return { host, seen, transcript };
}

interface Ran {
  outcome: RolloutOutcome | GroupRewardOutcome;
  error: RolloutOutcome["error"];
  seen: ReturnType<typeof recordingHost>["seen"];
  task: { case: string; word?: string };
  /** The transcript as the reward was given it, and as the runner held it afterwards. */
  transcriptGiven: string;
  transcriptAfter: string;
  durationMs: number;
}

const HANGING = new Set(["chat-flood", "calls-after-return"]);
let compiled: CompiledExperiment;
const results = new Map<string, Ran>();
const ordinary: RolloutOutcome[] = [];

async function runCase(c: HostileCase): Promise<Ran> {
  const { host, seen, transcript } = recordingHost(HANGING.has(c.case) ? "never" : "now");
  const task = { case: c.case, word: "apple" };
  const started = performance.now();
  if (c.where === "groupReward") {
    const outcome = await runGroupReward({
      compiled,
      task,
      rollouts: [{ output: "Apple.", messages: [], reward: 1, metrics: {} }],
      limits: CORPUS_LIMITS,
      host,
    });
    return { outcome, error: outcome.error, seen, task, transcriptGiven: "", transcriptAfter: "", durationMs: performance.now() - started };
  }
  let transcriptGiven = "";
  const outcome = await runRollout({
    compiled,
    task,
    split: "train",
    step: 1,
    group: 0,
    rolloutIndex: 0,
    limits: CORPUS_LIMITS,
    host,
    mcpServers: ["files"],
    // The reward gets a copy of the transcript the host recorded, as the runner gives it.
    getMessages: () => {
      transcriptGiven = JSON.stringify(transcript);
      return JSON.parse(transcriptGiven) as ChatMessage[];
    },
  });
  return { outcome, error: outcome.error, seen, task, transcriptGiven, transcriptAfter: JSON.stringify(transcript), durationMs: performance.now() - started };
}

beforeAll(async () => {
  const r = await compileExperiment(corpusFiles());
  if (!r.ok) throw new Error(JSON.stringify(r.diagnostics, null, 2));
  compiled = r.compiled;
  // Ordinary rollouts between the attacks: they must finish normally while the attacks run beside them.
  const jobs: (HostileCase | null)[] = HOSTILE_CASES.flatMap((c, i) => (i % 5 === 0 ? [null, c] : [c]));
  await mapConcurrent(jobs, 6, async (c) => {
    if (c) {
      results.set(c.case, await runCase(c));
      return;
    }
    const { host, transcript } = recordingHost("now");
    ordinary.push(
      await runRollout({ compiled, task: { case: "ordinary", word: "apple" }, split: "train", step: 1, group: 0, rolloutIndex: 0, limits: CORPUS_LIMITS, host, mcpServers: [], getMessages: () => transcript }),
    );
  });
}, 300_000);

/** Per case, what the runner's side must have seen, beyond the outcome in the table. */
const EXTRA: Record<string, (r: Ran) => void> = {
  "constructor-escape": (r) => {
    // Every global the sandbox has is one a bare isolate has, or the SDK's own; none of Node's.
    const globals = (r.outcome as RolloutOutcome).output as { globals: string[] };
    const isolate = new ivm.Isolate({ memoryLimit: 8 });
    const bare = new Set(isolate.createContextSync().evalSync("Object.getOwnPropertyNames(globalThis).join()").split(","));
    isolate.dispose();
    const extra = (globals as unknown as { globals: string[] }).globals.filter((g) => !bare.has(g));
    expect(extra.sort()).toEqual(["__rollbook_bundle", "__rollbook_entry", "__rollbook_host", "__zod_globalConfig", "__zod_globalRegistry"]);
    for (const removed of REMOVED_GLOBALS) expect(globals.globals).not.toContain(removed);
  },
  "pollute-bridge": (r) => {
    expect(r.seen.chats).toHaveLength(1);
    expect((r.outcome as RolloutOutcome).metrics).toMatchObject({ polluted: 1 });
    expect((r.outcome as RolloutOutcome).logs).toEqual(["still logging"]);
    expect(r.task).toEqual({ case: "pollute-bridge", word: "apple" }); // the host's task: untouched
  },
  "chat-flood": (r) => {
    // 4 in flight (limits.max_inflight_calls), 64 queued never reached the host, 9,932 refused in the
    // isolate; when the scenario returned, the 4 were aborted.
    expect(r.seen.chats).toHaveLength(CORPUS_LIMITS.max_inflight_calls);
    expect(r.seen.peak).toBe(CORPUS_LIMITS.max_inflight_calls);
    expect(r.seen.aborted).toBe(CORPUS_LIMITS.max_inflight_calls);
    expect(r.seen.inFlight).toBe(0);
  },
  "calls-after-return": (r) => {
    // The loop's first call and the un-awaited one were pending at the return: both aborted; the loop's
    // later calls were refused and never reached the host.
    expect(r.seen.chats).toHaveLength(2);
    expect(r.seen.aborted).toBe(2);
    expect((r.outcome as RolloutOutcome).reward).toBe(1);
  },
  "host-call-budget": (r) => expect(r.seen.chats).toHaveLength(0),
  "bridge-direct": (r) => {
    // Only one request was well-formed and small: the getter's first answer, read once.
    expect(r.seen.chats).toEqual([[{ role: "user", content: "hi" }]]);
    expect(r.seen.judges).toBe(0);
    expect(r.seen.mcpCalls).toBe(0);
  },
  "log-flood": (r) => {
    const logs = (r.outcome as RolloutOutcome).logs;
    expect(logs).toHaveLength(201);
    expect(logs[0]).toBe(`${"y".repeat(2_000)}… (998000 more characters)`);
    expect(logs[200]).toBe("(log limit of 200 lines reached; later lines dropped)");
    expect(r.durationMs).toBeLessThan(15_000);
  },
  "metric-name-flood": (r) => {
    const names = Object.keys((r.outcome as RolloutOutcome).metrics);
    expect(names).toHaveLength(64);
    expect(names).toContain("name_63");
  },
  "metric-value-flood": (r) => expect((r.outcome as RolloutOutcome).metrics.x).toBe(99_999),
  "stack-trace-bomb": (r) => expect((r.error?.stack ?? "").length).toBeLessThan(16_200),
  "reward-mutates-input": (r) => {
    expect((r.outcome as RolloutOutcome).reward).toBe(1); // the policy was refused to the reward
    expect(r.transcriptGiven).toContain("Say the word apple.");
    expect(r.transcriptAfter).toBe(r.transcriptGiven); // the runner's transcript: untouched by the reward
    expect(r.task).toEqual({ case: "reward-mutates-input", word: "apple" });
    expect(r.seen.chats).toHaveLength(1); // the scenario's own call; the reward's never reached the model
  },
  "giant-string-split": (r) => expect(r.error?.message).toContain("Fatal JavaScript invalid size error"),
};

describe("the hostile corpus", () => {
  it("ordinary rollouts running beside the attacks all finish with their reward", () => {
    expect(ordinary.length).toBeGreaterThanOrEqual(8);
    for (const o of ordinary) {
      expect(o.error).toBeNull();
      expect(o.output).toBe("Apple.");
      expect(o.reward).toBe(1);
    }
  });

  for (const c of HOSTILE_CASES) {
    it(`${c.case} (${c.where}): ${c.error ? `fails as ${c.error.kind}` : "harmless"} — ${c.attack}`, () => {
      const r = results.get(c.case);
      expect(r).toBeDefined();
      if (!r) return;
      if (c.error) {
        expect(r.error).toMatchObject({ kind: c.error.kind, message: expect.stringMatching(c.error.message) });
        if ("reward" in r.outcome) expect(r.outcome.reward).toBeNull();
        else expect(r.outcome.rewards).toBeNull();
      } else {
        expect(r.error).toBeNull();
        if (c.output !== undefined) expect((r.outcome as RolloutOutcome).output).toMatchObject(c.output as object);
      }
      EXTRA[c.case]?.(r);
    });
  }
});
