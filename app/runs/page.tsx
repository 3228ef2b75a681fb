import type { Metadata } from "next";
import { Suspense } from "react";
import { RunsTable } from "@/features/runs/components/runs-table";
import { Spinner } from "@/components/ui/primitives";

export const metadata: Metadata = { title: "Runs" };

/** The runs table; its filters, sort and search are read from the address by the table itself. */
export default function RunsPage() {
  return (
    <Suspense fallback={<Spinner />}>
      <RunsTable />
    </Suspense>
  );
}
