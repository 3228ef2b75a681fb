// The embedded PGlite database (used when DATABASE_URL is unset).
import { mkdir } from "node:fs/promises";
import path from "node:path";

import type { PGlite } from "@electric-sql/pglite";

/** The PGlite data directory under Rollbook's data directory. */
export function pgliteDataDir(dataDir: string): string {
  return path.resolve(dataDir, "pglite");
}

/**
 * Opens (creating on first use) the PGlite database under `dataDir`/pglite. PGlite is single-process: only
 * one process may have a given data directory open at a time (stop the server before running scripts/db.ts
 * on the embedded database). First open of a new directory takes a few seconds (initdb), later opens ~0.5 s.
 */
export async function openPglite(dataDir: string): Promise<PGlite> {
  const dir = pgliteDataDir(dataDir);
  await mkdir(dir, { recursive: true });
  const { PGlite: PGliteClass } = await import("@electric-sql/pglite");
  return PGliteClass.create(dir);
}
