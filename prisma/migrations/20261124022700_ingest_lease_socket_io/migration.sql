-- CreateTable
CREATE TABLE "IngestLease" (
    "runId" TEXT NOT NULL,
    "holder" TEXT NOT NULL,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "takenAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "emittedSeq" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "IngestLease_pkey" PRIMARY KEY ("runId")
);

-- CreateTable
CREATE TABLE "socket_io_attachments" (
    "id" BIGSERIAL NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "payload" BYTEA NOT NULL,

    CONSTRAINT "socket_io_attachments_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "IngestLease_expiresAt_idx" ON "IngestLease"("expiresAt");

-- CreateIndex
CREATE INDEX "socket_io_attachments_created_at_idx" ON "socket_io_attachments"("created_at");

-- AddForeignKey
ALTER TABLE "IngestLease" ADD CONSTRAINT "IngestLease_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE CASCADE ON UPDATE CASCADE;
