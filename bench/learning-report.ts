/**
 * Markdown tables for docs/benchmarks.md from the JSON files `bench/learning.ts --json` writes, so the
 * figures in the docs are the measured ones, copied by a script rather than by hand.
 *
 *   node --import tsx bench/learning-report.ts bench/results/learning-*.json [--metrics well_formed_call,correct]
 *
 * Per file: the greedy validation reward of every seed at every eval step, the rise, whether it learned
 * (final − step 0 ≥ the bench's margin), the wall time and the load average (1 min) at start and end;
 * then, for each metric named with --metrics that the file has, the same table of that metric's mean.
 */
import { readFileSync } from "node:fs";

interface EvalPoint {
  step: number;
  reward: number | null;
  metrics?: Record<string, number>;
}
interface SeedResult {
  seed: number;
  status: string;
  evals: EvalPoint[];
  rise: number | null;
  learned: boolean;
  total_s: number;
  loadavg_start: number[];
  loadavg_end: number[];
}
interface Summary {
  template: string;
  config: { num_steps: number; groups_per_step: number; rollouts_per_group: number; eval_temperature?: number };
  margin: number;
  seeds: number[];
  learned: number;
  total_s: number;
  date: string;
  /** Set while a bench is still running (or was cut short): how many of its seeds are in. */
  partial?: string;
  results: SeedResult[];
}

const args = process.argv.slice(2);
const mi = args.indexOf("--metrics");
const metricNames = mi >= 0 ? (args[mi + 1] ?? "").split(",").filter(Boolean) : [];
const files = args.filter((a, i) => !a.startsWith("--") && (mi < 0 || i !== mi + 1));
if (!files.length) throw new Error("usage: learning-report.ts <learning-*.json>… [--metrics a,b]");

const f3 = (x: number | null | undefined) => (x === null || x === undefined ? "–" : x.toFixed(3));
const signed = (x: number | null) => (x === null ? "–" : `${x >= 0 ? "+" : ""}${x.toFixed(3)}`);

for (const file of files) {
  const s = JSON.parse(readFileSync(file, "utf8")) as Summary;
  const steps = [...new Set(s.results.flatMap((r) => r.evals.map((e) => e.step)))].sort((a, b) => a - b);
  const c = s.config;
  console.log(`### ${s.template} (${c.num_steps} steps × ${c.groups_per_step} groups × ${c.rollouts_per_group} rollouts)\n`);
  const cut = s.partial ? ` **Cut short: ${s.partial}** (of seeds ${s.seeds.join(", ")}).` : "";
  console.log(`Learned on ${s.learned} of ${s.results.length} seeds (validation reward up by ≥ ${s.margin}); ${s.total_s} s in all, ${s.date.slice(0, 10)}.${cut}\n`);
  const decoding = c.eval_temperature ? `sampled, T=${c.eval_temperature}` : "greedy";
  console.log(`| validation reward (${decoding}) | ${steps.map((x) => `step ${x}`).join(" | ")} | rise | learned | time | load avg |`);
  console.log(`| --- | ${steps.map(() => "---").join(" | ")} | --- | --- | --- | --- |`);
  for (const r of s.results) {
    const by = new Map(r.evals.map((e) => [e.step, e.reward]));
    console.log(
      `| seed ${r.seed} | ${steps.map((x) => f3(by.get(x))).join(" | ")} | ${signed(r.rise)} | ${r.learned ? "yes" : `**no** (${r.status})`} | ` +
        `${Math.round(r.total_s)} s | ${r.loadavg_start[0]} → ${r.loadavg_end[0]} |`,
    );
  }
  console.log("");
  for (const name of metricNames) {
    if (!s.results.some((r) => r.evals.some((e) => e.metrics?.[name] !== undefined))) continue;
    console.log(`| validation ${name} | ${steps.map((x) => `step ${x}`).join(" | ")} | change |`);
    console.log(`| --- | ${steps.map(() => "---").join(" | ")} | --- |`);
    for (const r of s.results) {
      const by = new Map(r.evals.map((e) => [e.step, e.metrics?.[name]]));
      const first = r.evals[0]?.metrics?.[name];
      const last = r.evals.at(-1)?.metrics?.[name];
      const change = first !== undefined && last !== undefined && r.evals.length > 1 ? last - first : null;
      console.log(`| seed ${r.seed} | ${steps.map((x) => f3(by.get(x))).join(" | ")} | ${signed(change)} |`);
    }
    console.log("");
  }
}
