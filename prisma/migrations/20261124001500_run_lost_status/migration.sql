-- AlterEnum
ALTER TYPE "RunStatus" ADD VALUE 'lost';

-- AlterTable
ALTER TABLE "Run" ADD COLUMN     "lostSince" TIMESTAMP(3);
