-- CreateTable
CREATE TABLE "ArtTrainingJob" (
    "id" TEXT NOT NULL,
    "runId" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'queued',
    "events" JSONB NOT NULL DEFAULT '[]',
    "error" TEXT,
    "artConfig" JSONB NOT NULL DEFAULT '{}',
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ArtTrainingJob_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ArtTrainingJob_runId_createdAt_idx" ON "ArtTrainingJob"("runId", "createdAt");

-- AddForeignKey
ALTER TABLE "ArtTrainingJob" ADD CONSTRAINT "ArtTrainingJob_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE CASCADE ON UPDATE CASCADE;
