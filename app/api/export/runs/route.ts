/** The runs table as CSV, with the page's filters and order (server/http/export.ts). */
import { handleRunsTableCsv } from "@/server/http/export";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export function GET(req: Request): Promise<Response> {
  return handleRunsTableCsv(req);
}
