-- AlterTable
ALTER TABLE "Run" ADD COLUMN     "attempt" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "attemptOpen" BOOLEAN NOT NULL DEFAULT false;

-- Runs whose runner may still be writing their current attempt when this migrates: the active ones.
UPDATE "Run" SET "attemptOpen" = true WHERE "status" IN ('running', 'lost') OR ("status" = 'queued' AND "runnerId" IS NOT NULL);
