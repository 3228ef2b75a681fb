-- A rollout's prompt count may be null now: not known (an ART client's logged rollout, whose prompt Rollbook
-- never tokenised, contracts/run.ts Trajectory.tokens). The sampled tokens of a step count such a rollout's
-- completion alone, as before, instead of dropping the rollout from the sum (null + n is null). The function
-- is otherwise the one 20261127135429_step_series made. Stored rows need no backfill (they had 0, not null).
CREATE OR REPLACE FUNCTION "refresh_step_series"(run_id TEXT, steps INTEGER[]) RETURNS VOID LANGUAGE sql AS $$
  WITH wanted AS (
    SELECT DISTINCT unnest(steps) AS "step"
  ), t AS (
    SELECT "step", "group", "reward", "metrics", "tokens" FROM "Trajectory" JOIN wanted USING ("step")
    WHERE "runId" = run_id AND "split" = 'train'
  ), per_step AS (
    SELECT "step", count(*)::int AS n, count(DISTINCT "group")::int AS g, min("reward") AS rmin, max("reward") AS rmax,
      avg(("tokens"->>'completion')::float8) AS comp,
      sum(COALESCE(("tokens"->>'prompt')::float8, 0) + ("tokens"->>'completion')::float8) AS tok
    FROM t GROUP BY "step"
  ), per_key AS (
    SELECT "step", jsonb_object_agg(key, mean) AS means FROM (
      SELECT t."step", k.key, avg((k.value)::float8) AS mean
      FROM t CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(t."metrics") = 'object' THEN t."metrics" ELSE '{}'::jsonb END) AS k
      WHERE jsonb_typeof(k.value) = 'number'
      GROUP BY t."step", k.key
    ) means_by_key GROUP BY "step"
  ), s AS (
    SELECT "step", EXTRACT(EPOCH FROM "createdAt")::float8 AS at, "metrics" AS m, "metrics"->'trainer' AS tr
    FROM "Step" JOIN wanted USING ("step") WHERE "runId" = run_id
  ), rows AS (
    SELECT "step", s.at, s.m, s.tr, COALESCE(r.n, 0) AS n, COALESCE(r.g, 0) AS g, r.rmin, r.rmax, r.comp, r.tok, COALESCE(k.means, '{}'::jsonb) AS means
    FROM s FULL JOIN per_step r USING ("step") LEFT JOIN per_key k USING ("step")
  ), upserted AS (
    INSERT INTO "StepSeries" ("runId", "step", "at", "rewardMean", "rewardStd", "exceptionRate", "tokensPerS", "rolloutS",
      "trainS", "stepS", "loss", "kl", "entropy", "gradNorm", "probsCorr", "checkpointS",
      "rollouts", "groups", "rewardMin", "rewardMax", "completionMean", "sampledTokens", "metricMeans")
    SELECT run_id, "step", at, jsonb_float8(m->'reward_mean'), jsonb_float8(m->'reward_std_within_group'),
      jsonb_float8(m->'exception_rate'), jsonb_float8(m->'tokens_per_s'), jsonb_float8(m->'rollout_s'),
      jsonb_float8(m->'train_s'), jsonb_float8(m->'step_s'), jsonb_float8(tr->'loss'), jsonb_float8(tr->'kl'),
      jsonb_float8(tr->'entropy'), jsonb_float8(tr->'grad_norm'), jsonb_float8(tr->'probs_corr'), jsonb_float8(tr->'checkpoint_s'),
      n, g, rmin, rmax, comp, tok, means
    FROM rows
    ON CONFLICT ("runId", "step") DO UPDATE SET "at" = EXCLUDED."at", "rewardMean" = EXCLUDED."rewardMean",
      "rewardStd" = EXCLUDED."rewardStd", "exceptionRate" = EXCLUDED."exceptionRate", "tokensPerS" = EXCLUDED."tokensPerS",
      "rolloutS" = EXCLUDED."rolloutS", "trainS" = EXCLUDED."trainS", "stepS" = EXCLUDED."stepS", "loss" = EXCLUDED."loss",
      "kl" = EXCLUDED."kl", "entropy" = EXCLUDED."entropy", "gradNorm" = EXCLUDED."gradNorm", "probsCorr" = EXCLUDED."probsCorr",
      "checkpointS" = EXCLUDED."checkpointS", "rollouts" = EXCLUDED."rollouts", "groups" = EXCLUDED."groups", "rewardMin" = EXCLUDED."rewardMin",
      "rewardMax" = EXCLUDED."rewardMax", "completionMean" = EXCLUDED."completionMean",
      "sampledTokens" = EXCLUDED."sampledTokens", "metricMeans" = EXCLUDED."metricMeans"
    RETURNING 1
  )
  DELETE FROM "StepSeries" WHERE "runId" = run_id AND "step" IN (SELECT "step" FROM wanted) AND "step" NOT IN (SELECT "step" FROM rows)
$$;
