-- AlterTable
ALTER TABLE "Runner" ADD COLUMN     "notices" JSONB NOT NULL DEFAULT '[]';
