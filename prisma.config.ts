// Prisma 7 reads its settings from here, not from schema.prisma, and does not load .env by itself.
// DATABASE_URL is optional: `prisma generate` needs no database, and without it Rollbook uses the embedded
// PGlite database (see server/db.ts). Migrations are created and applied offline by scripts/db.ts through
// Prisma's WASM schema engine; where the real CLI can download its engine, `prisma migrate deploy|status`
// read the same prisma/migrations folder and `_prisma_migrations` table.
import { defineConfig } from "prisma/config";

export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  ...(process.env.DATABASE_URL ? { datasource: { url: process.env.DATABASE_URL } } : {}),
});
