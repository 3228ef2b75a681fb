import type { Metadata } from "next";
import { NewExperiment } from "@/features/experiments/components/new-experiment";

export const metadata: Metadata = { title: "New experiment" };

/** `/experiments/new?template=calculator` preselects a template. */
export default async function NewExperimentPage({ searchParams }: { searchParams: Promise<{ template?: string | string[] }> }) {
  const { template } = await searchParams;
  return <NewExperiment initialTemplate={typeof template === "string" ? template : undefined} />;
}
