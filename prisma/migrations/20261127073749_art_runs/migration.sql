-- AlterEnum
ALTER TYPE "RunKind" ADD VALUE 'art';

-- AlterTable
ALTER TABLE "Run" ADD COLUMN     "artClient" JSONB;
