import { readFile } from "node:fs/promises";
import path from "node:path";
import type { Metadata } from "next";
import { ExperimentEditor } from "@/components/editor/experiment-editor";

export const metadata: Metadata = { title: "Experiment" };

// The scenario SDK's types, read from the one source the runner also checks against, and handed to
// Monaco's TS worker (addExtraLib). Read once per server process.
let sdkTypes: Promise<string> | null = null;
function loadSdkTypes(): Promise<string> {
  sdkTypes ??= readFile(path.join(process.cwd(), "gpu-runner/sdk/rollbook.d.ts"), "utf8").catch(() => "");
  return sdkTypes;
}

export default async function ExperimentPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return <ExperimentEditor id={id} sdkTypes={await loadSdkTypes()} />;
}
