import type { Metadata } from "next";
import { RunsTable } from "@/components/runs-table";

export const metadata: Metadata = { title: "Runs" };

export default async function RunsPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { experiment } = await searchParams;
  return <RunsTable experimentId={typeof experiment === "string" ? experiment : undefined} />;
}
