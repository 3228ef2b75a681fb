/**
 * A finished train run with many rollouts, written straight into a Rollbook Postgres database (the run row
 * and its event log, as ingestion would have stored them), for the run page's benchmark and browser test:
 * a real run of 10,000 rollouts would take hours on CPU, and the page only reads the stored log.
 *
 * Each rollout is a valid Trajectory (checked with the contract): a tool-calling conversation (calculator
 * call + JSON result + final answer), per-turn figures, reward with components, the scenario's output; some
 * groups have zero reward variance ("trained nothing"), a few rollouts failed with a mapped stack.
 */
import pg from "pg";
import { RunConfig, RunEvent, type Trajectory } from "@contracts";
import { mulberry32 } from "@/contracts/random";

export interface SeedOptions {
  /** The user whose (first) workspace gets the run. */
  email: string;
  steps: number;
  groupsPerStep: number;
  rolloutsPerGroup: number;
  tasks?: number;
}

export interface SeededRun {
  runId: string;
  rollouts: number;
  /** A few rollout ids, by what they show. */
  sample: { withToolCall: string; failed: string | null };
}

/** Deterministic pseudo-random numbers, so every seeding gives the same run. */
const rng = mulberry32;

const WORDS = "so the sum is we add these two numbers carefully and check the result once more before answering with the final value".split(" ");

function trajectory(runId: string, step: number, group: number, k: number, tasks: number, rand: () => number, groupKind: number): Trajectory {
  const taskIndex = group % tasks;
  const a = 3 + ((taskIndex * 7) % 50);
  const b = 5 + ((taskIndex * 13) % 40);
  const difficulty = taskIndex % 3 === 0 ? "hard" : "easy";
  const task = { prompt: `What is ${a} + ${b}?`, answer: a + b, difficulty, tags: taskIndex % 2 ? ["arithmetic"] : ["arithmetic", "carry"] };
  // A mixed group always has variance: its first rollout is right, its second wrong (and neither fails).
  const correct = groupKind === 0 ? true : groupKind === 1 ? false : k === 0 ? true : k === 1 ? false : rand() < 0.3 + step * 0.02;
  const answer = correct ? a + b : a + b + 1 + Math.floor(rand() * 5);
  const words = Array.from({ length: 20 + Math.floor(rand() * 40) }, () => WORDS[Math.floor(rand() * WORDS.length)]!).join(" ");
  const failed = groupKind === 2 && k >= 2 && rand() < 0.04;
  const callId = `call_${step}_${group}_${k}`;
  const messages: Trajectory["messages"] = [
    { role: "system", content: "You are a careful calculator. Use the add tool." },
    { role: "user", content: task.prompt },
    { role: "assistant", content: "", tool_calls: [{ id: callId, type: "function", function: { name: "add", arguments: JSON.stringify({ a, b }) } }] },
    { role: "tool", content: JSON.stringify({ result: a + b }), tool_call_id: callId, name: "add" },
    { role: "assistant", content: `${words}. The answer is ${answer}.` },
  ];
  const reward = failed ? null : correct ? 1 : 0;
  const started = Date.UTC(2026, 10, 1) + step * 60_000 + group * 1_000 + k * 10;
  return {
    id: `${runId}:s${step}:g${group}:r${k}`,
    step,
    group,
    task_index: taskIndex,
    split: "train",
    task,
    messages,
    reward,
    metrics: failed ? { turns: 2, tool_calls: 1 } : { turns: 2, tool_calls: 1, malformed_tool_calls: 0, correct: correct ? 1 : 0, format: 1 },
    error: failed ? { kind: "thrown", message: "answer missing", stack: "Error: answer missing\n    at parse (lib/parse.ts:4:11)\n    at rollout (scenario.ts:12:5)" } : null,
    model: "HuggingFaceTB/SmolLM2-135M-Instruct",
    tokens: { prompt: 120 + taskIndex, completion: 30 + Math.floor(rand() * 60) },
    timings: { started_at: started, duration_ms: 400 + Math.floor(rand() * 900), model_ms: 300 + Math.floor(rand() * 600) },
    logs: k === 0 ? [`task ${taskIndex}: expecting ${a + b}`] : [],
    output: { answer, text: `The answer is ${answer}.` },
    turns: [
      { message_index: 2, prompt_tokens: 110 + taskIndex, completion_tokens: 18, model_ms: 150 + Math.floor(rand() * 200), finish_reason: "tool_calls" },
      { message_index: 4, prompt_tokens: 140 + taskIndex, completion_tokens: 12 + Math.floor(rand() * 50), model_ms: 150 + Math.floor(rand() * 300), finish_reason: "stop" },
    ],
  };
}

export async function seedRun(databaseUrl: string, opts: SeedOptions): Promise<SeededRun> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const ws = await client.query<{ workspaceId: string; userId: string }>(
      `SELECT m."workspaceId", u."id" AS "userId" FROM "Membership" m JOIN "User" u ON u."id" = m."userId" WHERE u."email" = $1 ORDER BY m."createdAt" LIMIT 1`,
      [opts.email],
    );
    const { workspaceId, userId } = ws.rows[0] ?? {};
    if (!workspaceId) throw new Error(`seedRun: no workspace for ${opts.email}`);
    const exp = await client.query<{ experimentId: string; versionId: string }>(
      `SELECT e."id" AS "experimentId", v."id" AS "versionId" FROM "Experiment" e JOIN "ExperimentVersion" v ON v."experimentId" = e."id"
       WHERE e."workspaceId" = $1 ORDER BY e."createdAt", v."number" DESC LIMIT 1`,
      [workspaceId],
    );
    const { experimentId, versionId } = exp.rows[0] ?? {};
    if (!experimentId) throw new Error(`seedRun: workspace ${workspaceId} has no experiment`);

    const runId = `seeded${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
    const config = RunConfig.parse({ num_steps: opts.steps, rollouts_per_group: opts.rolloutsPerGroup });
    const tasks = opts.tasks ?? Math.max(1, opts.groupsPerStep);
    const rand = rng(42);
    const events: RunEvent[] = [];
    let seq = 0;
    const push = (type: RunEvent["type"], payload: unknown) => events.push(RunEvent.parse({ run_id: runId, seq: ++seq, ts: Date.UTC(2026, 10, 1) + seq * 50, type, payload }));
    push("run.started", { kind: "train", config, model: config.model, resumed_from_step: 0 });
    let withToolCall = "";
    let failed: string | null = null;
    let rewardSum = 0;
    let rewardCount = 0;
    let errorCount = 0;
    for (let step = 0; step < opts.steps; step++) {
      const rewards: number[] = [];
      for (let group = 0; group < opts.groupsPerStep; group++) {
        // Group kinds: all correct, all wrong (both zero variance), or mixed.
        const groupKind = (group + step) % 5 === 0 ? 0 : (group + step) % 7 === 0 ? 1 : 2;
        for (let k = 0; k < opts.rolloutsPerGroup; k++) {
          const t = trajectory(runId, step, group, k, tasks, rand, groupKind);
          withToolCall ||= t.id;
          if (t.error) {
            failed ??= t.id;
            errorCount++;
          }
          if (t.reward !== null) {
            rewards.push(t.reward);
            rewardSum += t.reward;
            rewardCount++;
          }
          push("rollout.finished", t);
        }
      }
      const mean = rewards.reduce((x, y) => x + y, 0) / Math.max(1, rewards.length);
      push("step.finished", {
        step,
        reward_mean: mean,
        reward_std_within_group: 0.3,
        exception_rate: 0.01,
        groups_trainable: opts.groupsPerStep,
        rollouts: opts.groupsPerStep * opts.rolloutsPerGroup,
        rollout_s: 10,
        train_s: 5,
        step_s: 15,
        tokens_per_s: 200,
        trainer: null,
      });
    }
    push("run.finished", { status: "completed", error: null, diagnostics: [] });

    const number = (await client.query<{ n: number }>(`SELECT COALESCE(MAX("number"), 0) + 1 AS n FROM "Run" WHERE "workspaceId" = $1`, [workspaceId])).rows[0]!.n;
    await client.query("BEGIN");
    await client.query(
      `INSERT INTO "Run" ("id", "number", "workspaceId", "experimentId", "versionId", "createdById", "kind", "status", "config", "baseModel", "seed",
         "codeHash", "tasksHash", "lastSeq", "currentStep", "rolloutCount", "rewardSum", "rewardCount", "errorCount", "startedAt", "finishedAt")
       VALUES ($1, $2, $3, $4, $5, $6, 'train', 'completed', $7, $8, 42, 'seeded', 'seeded', $9, $10, $11, $12, $13, $14, now(), now())`,
      [runId, number, workspaceId, experimentId, versionId, userId, JSON.stringify(config), config.model, seq, opts.steps - 1, events.length - 2 - opts.steps, rewardSum, rewardCount, errorCount],
    );
    // In slices of 2,000: one statement per slice, the payloads as one JSON parameter.
    for (let i = 0; i < events.length; i += 2000) {
      const slice = events.slice(i, i + 2000).map((e) => ({ seq: e.seq, type: e.type, payload: e.payload, ts: new Date(e.ts).toISOString() }));
      await client.query(
        `INSERT INTO "RunEvent" ("runId", "seq", "type", "payload", "ts")
         SELECT $1, x."seq", x."type", x."payload", x."ts" FROM jsonb_to_recordset($2::jsonb) AS x("seq" int, "type" text, "payload" jsonb, "ts" timestamptz)`,
        [runId, JSON.stringify(slice)],
      );
    }
    await client.query("COMMIT");
    return { runId, rollouts: opts.steps * opts.groupsPerStep * opts.rolloutsPerGroup, sample: { withToolCall, failed } };
  } catch (e) {
    await client.query("ROLLBACK").catch(() => {});
    throw e;
  } finally {
    await client.end();
  }
}
