import type { Metadata } from "next";
import { ExperimentEditor } from "@/features/experiments/components/editor/experiment-editor";

export const metadata: Metadata = { title: "Experiment" };

export default async function ExperimentPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  // Keyed by id: another experiment is a fresh editor state (files, active file, problems), not a merge.
  return <ExperimentEditor key={id} id={id} />;
}
