/** The Postgres database the e2e stack serves (its name is chosen in playwright.config.ts). */
export function e2eDatabaseUrl(): string {
  const name = process.env.E2E_DB_NAME;
  if (!name) throw new Error("E2E_DB_NAME is not set (playwright.config.ts sets it)");
  return `${process.env.E2E_PG_URL ?? "postgresql://postgres@127.0.0.1:5432"}/${name}`;
}
