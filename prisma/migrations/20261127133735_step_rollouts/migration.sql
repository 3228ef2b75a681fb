-- CreateTable
CREATE TABLE "StepRollouts" (
    "runId" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "rollouts" INTEGER NOT NULL,
    "rewardMin" DOUBLE PRECISION,
    "rewardMax" DOUBLE PRECISION,
    "completionMean" DOUBLE PRECISION,
    "sampledTokens" DOUBLE PRECISION,
    "metricMeans" JSONB NOT NULL,

    CONSTRAINT "StepRollouts_pkey" PRIMARY KEY ("runId","step")
);

-- AddForeignKey
ALTER TABLE "StepRollouts" ADD CONSTRAINT "StepRollouts_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The per-step aggregation of a run's train rollouts, written once: ingest calls it for the steps a batch
-- touched, in the batch's transaction (features/metrics/server/step-rollouts.ts), and the backfill below for
-- every stored step. It sets the steps' rows to what their Trajectory rows add up to now, so calling it
-- again (a re-delivered batch, a rollout replaced by a redone step) never counts anything twice, and a step
-- left with no train rollout loses its row. A metrics key's mean is over the rollouts where it is a number
-- (the contract allows only numbers, and the guard keeps a hand-written row from failing a batch).
-- One statement with no semicolon inside: adapter-pg runs a migration script split at every semicolon.
CREATE FUNCTION "refresh_step_rollouts"(run_id TEXT, steps INTEGER[]) RETURNS VOID LANGUAGE sql AS $$
  WITH t AS (
    SELECT "step", "reward", "metrics", "tokens" FROM "Trajectory"
    WHERE "runId" = run_id AND "split" = 'train' AND "step" = ANY(steps)
  ), per_step AS (
    SELECT "step", count(*)::int AS n, min("reward") AS rmin, max("reward") AS rmax,
      avg(("tokens"->>'completion')::float8) AS comp,
      sum(("tokens"->>'prompt')::float8 + ("tokens"->>'completion')::float8) AS tok
    FROM t GROUP BY "step"
  ), per_key AS (
    SELECT "step", jsonb_object_agg(key, mean) AS means FROM (
      SELECT t."step", k.key, avg((k.value)::float8) AS mean
      FROM t CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(t."metrics") = 'object' THEN t."metrics" ELSE '{}'::jsonb END) AS k
      WHERE jsonb_typeof(k.value) = 'number'
      GROUP BY t."step", k.key
    ) means_by_key GROUP BY "step"
  ), upserted AS (
    INSERT INTO "StepRollouts" ("runId", "step", "rollouts", "rewardMin", "rewardMax", "completionMean", "sampledTokens", "metricMeans")
    SELECT run_id, s."step", s.n, s.rmin, s.rmax, s.comp, s.tok, COALESCE(k.means, '{}'::jsonb)
    FROM per_step s LEFT JOIN per_key k USING ("step")
    ON CONFLICT ("runId", "step") DO UPDATE SET "rollouts" = EXCLUDED."rollouts", "rewardMin" = EXCLUDED."rewardMin",
      "rewardMax" = EXCLUDED."rewardMax", "completionMean" = EXCLUDED."completionMean",
      "sampledTokens" = EXCLUDED."sampledTokens", "metricMeans" = EXCLUDED."metricMeans"
    RETURNING 1
  )
  DELETE FROM "StepRollouts" WHERE "runId" = run_id AND "step" = ANY(steps) AND "step" NOT IN (SELECT "step" FROM per_step)
$$;

-- Backfill: runs stored before this migration chart from the table like new ones.
SELECT "refresh_step_rollouts"(r."runId", r.steps)
FROM (SELECT "runId", array_agg(DISTINCT "step") AS steps FROM "Trajectory" WHERE "split" = 'train' GROUP BY "runId") r;
