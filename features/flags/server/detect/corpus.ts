/**
 * The flag corpus (bench/flag-corpus.ts builds it from real runs): each entry is the rule input of one real
 * run and its label — "healthy" (it must raise no warning or critical flag) or the rule it must raise. The
 * replay test (corpus.test.ts) and the confusion table in docs/benchmarks.md both judge it here.
 */
import fs from "node:fs";
import path from "node:path";
import { evaluateFlags } from "./evaluate";
import { FLAG_RULES, type Flag, type RuleInput } from "./types";

export const CORPUS_DIR = path.resolve(import.meta.dirname, "../../../../bench/flag-corpus/runs");

export interface CorpusEntry {
  name: string;
  /** "healthy", or the rule (FLAG_RULES) this run must raise at warning or critical. */
  label: string;
  source: { template: string; seed: number; run: string; status: string; date: string };
  input: RuleInput;
}

export function readCorpus(dir = CORPUS_DIR): CorpusEntry[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as CorpusEntry);
}

export interface Judged {
  entry: CorpusEntry;
  flags: Flag[];
  /** The rules raised at warning or critical (the alerted ones). */
  alerted: string[];
  /** Healthy: nothing alerted. A pathology: its own rule alerted. */
  correct: boolean;
}

export function judge(entry: CorpusEntry): Judged {
  const flags = evaluateFlags(entry.input);
  const alerted: string[] = [...new Set(flags.filter((f) => f.severity !== "info").map((f) => f.rule))];
  const correct = entry.label === "healthy" ? alerted.length === 0 : (alerted as string[]).includes(entry.label);
  return { entry, flags, alerted, correct };
}

/**
 * The confusion table: one row per label, one column per rule (how many of the label's runs raised it at
 * warning/critical), "nothing" (no alerted flag) and "info" (the info flags raised); then one line per run.
 */
export function corpusTable(entries: CorpusEntry[]): string {
  const judged = entries.map(judge);
  const labels = [...new Set(judged.map((j) => j.entry.label))].sort((a, b) => (a === "healthy" ? -1 : b === "healthy" ? 1 : a.localeCompare(b)));
  const rules = FLAG_RULES.filter((r) => r !== "stalled" && judged.some((j) => (j.alerted as string[]).includes(r) || j.entry.label === r));
  const head = `| label (runs) | ${rules.join(" | ")} | nothing alerted | info flags raised |`;
  const sep = `| --- | ${rules.map(() => "---").join(" | ")} | --- | --- |`;
  const rows = labels.map((label) => {
    const of = judged.filter((j) => j.entry.label === label);
    const cell = (r: string) => {
      const n = of.filter((j) => j.alerted.includes(r)).length;
      return r === label ? `**${n}**` : String(n);
    };
    const none = of.filter((j) => j.alerted.length === 0).length;
    const info = [...new Set(of.flatMap((j) => j.flags.filter((f) => f.severity === "info").map((f) => f.rule)))].join(", ") || "—";
    return `| ${label} (${of.length}) | ${rules.map(cell).join(" | ")} | ${label === "healthy" ? `**${none}**` : none} | ${info} |`;
  });
  const lines = judged.map(
    (j) =>
      `| ${j.entry.name} | ${j.entry.source.template} | ${j.entry.source.seed} | ${j.entry.label} | ${j.entry.input.steps.length} | ` +
      `${j.flags.map((f) => `${f.rule} (${f.severity}, ${f.firstStep === f.lastStep ? f.firstStep : `${f.firstStep}–${f.lastStep}`})`).join(", ") || "—"} | ${j.correct ? "yes" : "**no**"} |`,
  );
  return [
    head,
    sep,
    ...rows,
    "",
    "| run | template | seed | label | steps | flags raised (severity, steps) | right |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...lines,
  ].join("\n");
}
