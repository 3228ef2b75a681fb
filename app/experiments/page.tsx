import type { Metadata } from "next";
import { ExperimentsList } from "@/components/experiments-list";

export const metadata: Metadata = { title: "Experiments" };

export default function ExperimentsPage() {
  return <ExperimentsList />;
}
