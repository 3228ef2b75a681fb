/**
 * The flag corpus: what the pathology rules (features/flags/server/detect) read, taken from real runs, each
 * labelled with the flags it must raise. Healthy runs are the learning bench's runs of every template on
 * their seeds; the pathologies are the same bench on seeded broken experiments (bench/flag-corpus/pathologies:
 * a reward that pays for length, a reward that always answers 0.2, a learning rate 20× the default with a KL
 * penalty, a scenario that starts throwing mid-run). features/flags/server/detect/corpus.test.ts replays it.
 *
 *   # 1. real runs, their events kept (one folder per corpus entry):
 *   node --no-node-snapshot --import tsx bench/learning.ts --template templates/say-the-word --seeds 42,7 \
 *     --keep-runs /tmp/corpus/say-the-word --quiet
 *   # 2. each run through real ingestion into a fresh Postgres database, its rule input written to the corpus:
 *   node --no-node-snapshot --import tsx bench/flag-corpus.ts extract /tmp/corpus/say-the-word \
 *     --label healthy --source templates/say-the-word [--name say-the-word]
 *   node --no-node-snapshot --import tsx bench/flag-corpus.ts extract /tmp/corpus/length-hack \
 *     --label reward_hacking --source bench/flag-corpus/pathologies/length-hack
 *   # 3. the confusion table (docs/benchmarks.md "Flags"):
 *   node --no-node-snapshot --import tsx bench/flag-corpus.ts table
 *
 * A label is "healthy" (no warning or critical flag may be raised) or the rule the run must raise at warning
 * or critical. Needs the Postgres at TEST_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/postgres).
 */
import fs from "node:fs";
import path from "node:path";
import { RunEvent } from "@contracts";
import { ingestEvents } from "@/features/run-lifecycle/server";
import { loadRuleInput } from "@/features/flags/server/detect/store";
import { corpusTable, CORPUS_DIR, readCorpus, type CorpusEntry } from "@/features/flags/server/detect/corpus";
import { FLAG_RULES } from "@/features/flags/server/detect/types";
import { createRunningRun, createTestDb, newWorkspace } from "../server/test/harness";

const [command, ...rest] = process.argv.slice(2);
const opt = (name: string) => {
  const i = rest.indexOf(name);
  return i >= 0 ? rest[i + 1] : undefined;
};

if (command === "extract") await extract(rest[0]!, opt("--label") ?? "", opt("--source") ?? "", opt("--name"));
else if (command === "table") console.log(corpusTable(readCorpus()));
else {
  console.error("usage: bench/flag-corpus.ts extract <kept-runs-dir> --label healthy|<rule> --source <template> | table");
  process.exit(2);
}

/** Each kept run under `dir` (one folder per seed) → bench/flag-corpus/runs/<name>-s<seed>.json (name: the folder's). */
async function extract(dir: string, label: string, source: string, name = path.basename(dir)): Promise<void> {
  if (label !== "healthy" && !(FLAG_RULES as readonly string[]).includes(label)) throw new Error(`--label: "${label}" is neither healthy nor a rule (${FLAG_RULES.join(", ")})`);
  const tdb = await createTestDb();
  try {
    const db = tdb.handle.prisma;
    const ws = await newWorkspace(db);
    for (const runDir of fs.readdirSync(dir).sort()) {
      const file = path.join(dir, runDir, "events.jsonl");
      if (!fs.existsSync(file)) continue;
      const events = fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => RunEvent.parse(JSON.parse(l)));
      const started = events.find((e) => e.type === "run.started");
      const config = started?.type === "run.started" ? (started.payload.config as Record<string, unknown>) : {};
      const finished = events.find((e) => e.type === "run.finished");
      const runId = await createRunningRun(db, ws);
      await db.run.update({ where: { id: runId }, data: { config: config as object } });
      // The runner's own run id is in each event; ingestion files them under the Run row's id.
      const ours = events.map((e) => ({ ...e, run_id: runId }));
      for (let i = 0; i < ours.length; i += 500) await ingestEvents(db, runId, ours.slice(i, i + 500));
      const entry: CorpusEntry = {
        name: `${name}-s${String(config.seed ?? "?")}`,
        label,
        source: { template: source, seed: Number(config.seed ?? 0), run: runDir, status: finished?.type === "run.finished" ? finished.payload.status : "unknown", date: new Date().toISOString().slice(0, 10) },
        input: await loadRuleInput(db, runId),
      };
      const out = path.join(CORPUS_DIR, `${entry.name}.json`);
      fs.writeFileSync(out, JSON.stringify(entry) + "\n");
      console.log(`${out}: ${entry.input.steps.length} steps, ${entry.input.rollouts.length} rollouts, ${entry.source.status}`);
    }
  } finally {
    await tdb.drop();
  }
}
