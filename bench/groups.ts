/**
 * What the training groups of finished runs looked like: per step, the mean words per reply, the share of
 * replies containing the task's word, and how many groups had no reward variance (and so trained nothing),
 * under the reward the run used and, with --reward, under another reward.ts re-scored on the same replies.
 * Reads the events.jsonl files that `bench/learning.ts --keep-runs DIR` leaves.
 *
 *   node --import tsx bench/groups.ts DIR/*\/events.jsonl [--reward templates/say-the-word/reward.ts]
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { RunEvent, Trajectory } from "../contracts";

type RewardFn = (input: { task: unknown; output: unknown; messages: unknown[] }) => { reward: number } | number;

const args = process.argv.slice(2);
const ri = args.indexOf("--reward");
const rewardPath = ri >= 0 ? args[ri + 1] : undefined;
const files = args.filter((a, i) => !a.startsWith("--") && (ri < 0 || i !== ri + 1));

function flat(rewards: number[]): boolean {
  return rewards.length < 2 || Math.max(...rewards) - Math.min(...rewards) <= 1e-9;
}

function replyOf(t: Trajectory): string {
  return [...t.messages].reverse().find((m) => m.role === "assistant")?.content ?? "";
}

async function main() {
  const alt = rewardPath ? ((await import(pathToFileURL(path.resolve(rewardPath)).href)).default as RewardFn) : null;
  const score = (t: Trajectory): number => {
    const r = alt!({ task: t.task, output: replyOf(t), messages: t.messages });
    return typeof r === "number" ? r : r.reward;
  };
  for (const file of files) {
    const events = readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as RunEvent);
    const byStep = new Map<number, Trajectory[]>();
    for (const e of events) {
      if (e.type === "rollout.finished" && e.payload.split === "train" && e.payload.reward !== null) {
        byStep.set(e.payload.step, [...(byStep.get(e.payload.step) ?? []), e.payload]);
      }
    }
    const evals = events.flatMap((e) => (e.type === "eval.finished" ? [`${e.payload.step}: ${e.payload.reward_mean?.toFixed(3)}`] : []));
    console.log(`\n${path.basename(path.dirname(file))}  validation ${evals.join("  ")}`);
    console.log(`step\twords/reply\tcontain\tflat groups (run's reward)${alt ? "\tflat groups (--reward)" : ""}`);
    for (const [step, ts] of [...byStep.entries()].sort((a, b) => a[0] - b[0])) {
      const groups = new Map<number, Trajectory[]>();
      for (const t of ts) groups.set(t.group, [...(groups.get(t.group) ?? []), t]);
      const gs = [...groups.values()];
      const words = ts.reduce((s, t) => s + (t.metrics.words ?? 0), 0) / ts.length;
      const contain = ts.filter((t) => t.metrics.contains === 1).length / ts.length;
      const flatRun = gs.filter((g) => flat(g.map((t) => t.reward as number))).length;
      const flatAlt = alt ? gs.filter((g) => flat(g.map(score))).length : 0;
      console.log(`${step}\t${words.toFixed(1)}\t${(100 * contain).toFixed(0)}%\t${flatRun} of ${gs.length}${alt ? `\t${flatAlt} of ${gs.length}` : ""}`);
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
