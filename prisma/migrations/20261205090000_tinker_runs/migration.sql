-- AlterEnum
ALTER TYPE "RunKind" ADD VALUE 'tinker';

-- CreateTable
CREATE TABLE "TinkerWeights" (
    "id" TEXT NOT NULL,
    "runId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "TinkerWeights_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "TinkerWeights_runId_kind_name_key" ON "TinkerWeights"("runId", "kind", "name");

-- AddForeignKey
ALTER TABLE "TinkerWeights" ADD CONSTRAINT "TinkerWeights_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE CASCADE ON UPDATE CASCADE;
