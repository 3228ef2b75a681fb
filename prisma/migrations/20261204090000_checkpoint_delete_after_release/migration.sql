-- A checkpoint asked to be deleted while an active run reads it (an eval of it, a fork starting from it, a judge
-- naming it) is kept until that run ends (features/checkpoints/server/checkpoint-holders.ts).
ALTER TABLE "Checkpoint" ADD COLUMN "deleteRequestedAt" TIMESTAMP(3);
