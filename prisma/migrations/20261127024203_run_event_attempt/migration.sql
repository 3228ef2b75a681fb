-- AlterTable
ALTER TABLE "RunEvent" ADD COLUMN     "attempt" INTEGER;
