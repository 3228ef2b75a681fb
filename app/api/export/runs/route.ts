/** The runs table as CSV, with the page's filters and order (features/runs/server/export-http.ts). */
import { handleRunsTableCsv } from "@/features/runs/server/export-http";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export function GET(req: Request): Promise<Response> {
  return handleRunsTableCsv(req);
}
