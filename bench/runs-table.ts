/**
 * The runs table at 10,000 runs: seeds a fresh Postgres database (created and dropped here, like the server
 * tests' harness) with one workspace of 10,000 runs (no events, no trajectories: the table never reads them)
 * beside another of 5,000, then times `runs.list`'s service (the ids query + the rows query) for each case:
 * P samples per repetition, p50 and p95 per repetition, the median of R repetitions reported.
 *
 *   node --import tsx bench/runs-table.ts [--runs 10000] [--samples 40] [--reps 3] [--explain]
 *
 * Needs the Postgres at TEST_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/postgres).
 */
import os from "node:os";
import { randomUUID } from "node:crypto";
import { openDatabase } from "../server/db";
import { createPgDatabase, dropPgDatabase } from "../server/db-migrate";
import { listRunsTable } from "@/features/runs/server";
import type { RunsListInput } from "@/features/runs";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const RUNS = arg("runs", 10_000);
const SAMPLES = arg("samples", 40);
const REPS = arg("reps", 3);
const EXPLAIN = process.argv.includes("--explain");
const adminUrl = process.env.TEST_DATABASE_URL || "postgresql://postgres@127.0.0.1:5432/postgres";

type Db = Awaited<ReturnType<typeof openDatabase>>["prisma"];

/**
 * One workspace's runs in a few INSERT … SELECT statements: 40 experiments, 6 authors, statuses, kinds,
 * tags and notes in realistic proportions (a tenth tagged "baseline", a third with notes), a summary with
 * reward_mean (missing on a twelfth), tokens_per_s and, on a fifth, eval_reward.
 */
async function seedWorkspace(db: Db, runs: number): Promise<{ workspaceId: string; authorId: string }> {
  const workspaceId = randomUUID();
  await db.$executeRaw`INSERT INTO "Workspace" ("id", "slug", "name") VALUES (${workspaceId}, ${`bench-${workspaceId.slice(0, 8)}`}, 'bench')`;
  await db.$executeRaw`INSERT INTO "User" ("id", "email", "name") SELECT ${workspaceId} || '-u' || g, ${workspaceId} || '-u' || g || '@bench.local', 'user ' || g FROM generate_series(1, 6) g`;
  await db.$executeRaw`INSERT INTO "Experiment" ("id", "workspaceId", "name", "updatedAt")
    SELECT ${workspaceId} || '-e' || g, ${workspaceId}, (ARRAY['say-the-word','tool-use agent','math reasoning','sql writer','web search'])[1 + g % 5] || ' ' || g, now()
    FROM generate_series(1, 40) g`;
  await db.$executeRaw`INSERT INTO "ExperimentVersion" ("id", "experimentId", "number", "files", "filesHash")
    SELECT "id" || '-v1', "id", 1, '{}'::jsonb, md5("id") FROM "Experiment" WHERE "workspaceId" = ${workspaceId}`;
  await db.$executeRaw`INSERT INTO "Run" ("id", "number", "workspaceId", "experimentId", "versionId", "createdById", "kind", "status", "config",
      "baseModel", "seed", "tags", "notes", "summary", "codeHash", "tasksHash", "rolloutCount", "rewardSum", "rewardCount", "createdAt")
    SELECT ${workspaceId} || '-r' || g, g, ${workspaceId}, ${workspaceId} || '-e' || (1 + g % 40), ${workspaceId} || '-e' || (1 + g % 40) || '-v1',
      ${workspaceId} || '-u' || (1 + g % 6),
      (ARRAY['train','train','dry_run','eval']::"RunKind"[])[1 + g % 4],
      (ARRAY['completed','completed','completed','failed','stopped','completed','completed','running']::"RunStatus"[])[1 + (g * 7) % 8],
      '{}'::jsonb,
      (ARRAY['SmolLM2-135M-Instruct','Qwen/Qwen2.5-0.5B-Instruct','Qwen/Qwen2.5-1.5B-Instruct'])[1 + g % 3], 1,
      CASE WHEN g % 10 = 0 THEN ARRAY['baseline', 'lr-' || (g % 5) || 'e-5'] WHEN g % 7 = 0 THEN ARRAY['ablation', 'kl-0.' || (g % 9)] ELSE ARRAY[]::text[] END,
      CASE WHEN g % 3 = 0 THEN 'run ' || g || ': tried temperature ' || (g % 10) / 10.0 || ', reward looked ' || (ARRAY['flat','noisy','better','worse'])[1 + g % 4] ELSE '' END,
      CASE WHEN g % 12 = 0 THEN '{}'::jsonb ELSE jsonb_build_object('reward_mean', round((random())::numeric, 3), 'tokens_per_s', 50 + g % 400, 'exception_rate', round((random() / 4)::numeric, 3))
        || CASE WHEN g % 5 = 0 THEN jsonb_build_object('eval_reward', round((random())::numeric, 3)) ELSE '{}'::jsonb END END,
      'c', 't', 32, 16 * random(), 32,
      now() - (g || ' minutes')::interval
    FROM generate_series(1, ${runs}::int) g`;
  return { workspaceId, authorId: `${workspaceId}-u3` };
}

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  const name = `rollbook_bench_${process.pid}_${randomUUID().slice(0, 8)}`;
  const url = await createPgDatabase(adminUrl, name);
  const handle = await openDatabase({ kind: "postgres", url });
  try {
    await handle.migrate();
    const db = handle.prisma;
    const t0 = performance.now();
    const { workspaceId, authorId } = await seedWorkspace(db, RUNS);
    await seedWorkspace(db, Math.floor(RUNS / 2)); // a neighbour, so the workspace condition filters something
    await db.$executeRawUnsafe(`ANALYZE`);
    console.log(`seeded ${RUNS} + ${Math.floor(RUNS / 2)} runs in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    // The second page of the metric sort is timed too: keyset pages cost the same as the first.
    const secondPage = (await listRunsTable(db, workspaceId, { sort: "m:reward_mean", limit: 50 })).nextCursor;
    const cases: [string, RunsListInput][] = [
      ["no filter (newest first)", {}],
      ["filter: status failed", { status: ["failed"] }],
      ["filter: tag + author + base model", { tag: "baseline", authorId, baseModel: "Qwen/Qwen2.5-1.5B-Instruct" }],
      ["sort: summary reward_mean desc", { sort: "m:reward_mean" }],
      ["sort: reward_mean, 2nd page (cursor)", { sort: "m:reward_mean", cursor: secondPage }],
      ["search: \"noisy\" (notes)", { q: "noisy" }],
      ["search: \"tool basel\" (name + tag)", { q: "tool basel" }],
    ];
    console.log(`load average before: ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}  (${os.cpus().length} CPUs)`);
    console.log(`${SAMPLES} samples × ${REPS} repetitions per case, page size 50; ms, median over repetitions\n`);
    console.log("| case | rows | p50 ms | p95 ms |\n| --- | --- | --- | --- |");
    for (const [label, input] of cases) {
      const p50s: number[] = [];
      const p95s: number[] = [];
      let rows = 0;
      for (let rep = 0; rep < REPS; rep++) {
        const times: number[] = [];
        for (let i = 0; i < SAMPLES + 3; i++) {
          const s = performance.now();
          const page = await listRunsTable(db, workspaceId, { ...input, limit: 50 });
          if (i >= 3) times.push(performance.now() - s); // 3 warm-ups
          rows = page.items.length;
        }
        times.sort((a, b) => a - b);
        p50s.push(percentile(times, 50));
        p95s.push(percentile(times, 95));
      }
      console.log(`| ${label} | ${rows} | ${median(p50s).toFixed(1)} | ${median(p95s).toFixed(1)} |`);
    }
    console.log(`\nload average after: ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`);
    if (EXPLAIN) {
      const plan = await db.$queryRawUnsafe<{ "QUERY PLAN": string }[]>(
        `EXPLAIN ANALYZE SELECT r."id" FROM "Run" r WHERE r."workspaceId" = '${workspaceId}'
         AND rollbook_run_search_doc(r."tags", r."notes") @@ to_tsquery('simple', 'noisy:*') ORDER BY r."createdAt" DESC LIMIT 51`,
      );
      console.log(plan.map((r) => r["QUERY PLAN"]).join("\n"));
    }
  } finally {
    await handle.close();
    await dropPgDatabase(adminUrl, name);
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
