/** Database handles the services accept: the process client or the client of an open transaction. */
import type { PrismaClient, Prisma } from "@/generated/prisma/client";

export type Db = PrismaClient;
export type Tx = Prisma.TransactionClient;
export type DbOrTx = Db | Tx;
