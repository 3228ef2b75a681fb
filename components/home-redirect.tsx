"use client";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useEffect } from "react";
import { useTRPC } from "./trpc";
import { ErrorBox, Spinner } from "./ui/primitives";

/** `/` opens the default experiment (the server creates it from the template on first use). */
export function HomeRedirect() {
  const trpc = useTRPC();
  const router = useRouter();
  const def = useQuery(trpc.experiments.default.queryOptions());
  const id = def.data?.id;
  useEffect(() => {
    if (id) router.replace(`/experiments/${id}`);
  }, [id, router]);
  return (
    <div className="p-6">
      {def.error ? (
        <ErrorBox title="Could not open the default experiment">
          {def.error.message} — <Link className="underline" href="/experiments">see all experiments</Link>
        </ErrorBox>
      ) : (
        <Spinner label="Opening the default experiment…" />
      )}
    </div>
  );
}
