-- Runner pool: runners per workspace (null = an instance runner every workspace may use), the token
-- encrypted at rest beside its hash, what the runner reports (device, models, capacity), health.

-- DropIndex
DROP INDEX "Runner_name_key";

-- AlterTable
ALTER TABLE "Runner" ADD COLUMN "workspaceId" TEXT,
ADD COLUMN "tokenCipher" TEXT,
ADD COLUMN "models" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN "capacity" INTEGER NOT NULL DEFAULT 2,
ADD COLUMN "capacityOverride" INTEGER,
ADD COLUMN "enabled" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN "health" TEXT NOT NULL DEFAULT 'unknown',
ADD COLUMN "lastError" TEXT;

-- The old device column held JSON nobody wrote: it becomes the runner's own words ("cpu", "cuda:0").
ALTER TABLE "Runner" DROP COLUMN "device";
ALTER TABLE "Runner" ADD COLUMN "device" TEXT;

-- AlterTable
ALTER TABLE "Run" ADD COLUMN "pinnedRunnerId" TEXT,
ADD COLUMN "preferredRunnerId" TEXT,
ADD COLUMN "initFrom" JSONB;

-- CreateIndex
CREATE UNIQUE INDEX "Runner_workspaceId_name_key" ON "Runner"("workspaceId", "name");

-- Instance runners (workspaceId NULL) are unique by name too: NULLs are distinct in a plain unique index.
CREATE UNIQUE INDEX "Runner_instance_name_key" ON "Runner"("name") WHERE "workspaceId" IS NULL;

-- CreateIndex
CREATE INDEX "Run_status_createdAt_idx" ON "Run"("status", "createdAt");

-- AddForeignKey
ALTER TABLE "Runner" ADD CONSTRAINT "Runner_workspaceId_fkey" FOREIGN KEY ("workspaceId") REFERENCES "Workspace"("id") ON DELETE CASCADE ON UPDATE CASCADE;
