"use client";
/**
 * The latest run's runtime errors (polled), marked as warnings in the editor while its code is that run's
 * code; the problems panel can hide them.
 */
import { useQuery } from "@tanstack/react-query";
import { useMemo, useState } from "react";
import type { ExperimentFiles } from "@contracts";
import { useTRPC } from "@/components/trpc";
import { runtimeDiagnostics, sameCode } from "./runtime-markers";

export function useRuntimeMarkers(experimentId: string, files: ExperimentFiles | null) {
  const trpc = useTRPC();
  const latest = useQuery(trpc.experiments.latestRuntimeErrors.queryOptions({ id: experimentId }, { refetchInterval: 15_000 }));
  const [show, setShow] = useState(true);
  const latestErrors = latest.data && latest.data.errors.length > 0 ? latest.data : null;
  /** Whether the editor's text is the code those errors came from (else the markers may point at moved lines). */
  const codeMatches = latestErrors !== null && files !== null && sameCode(latestErrors.code, files);
  const diagnostics = useMemo(() => (show && files ? runtimeDiagnostics(latestErrors, files) : []), [show, latestErrors, files]);
  return { latestErrors, codeMatches, diagnostics, show, setShow };
}
