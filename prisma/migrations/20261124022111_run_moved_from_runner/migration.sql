-- A run resumed on another runner remembers the runner it left, until that runner is told to stop it
ALTER TABLE "Run" ADD COLUMN     "movedFromRunnerId" TEXT;
