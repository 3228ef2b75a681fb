"use client";
/** The SDK's type libs for Monaco, fetched once per page session (GET /api/type-libs revalidates by ETag). */
import { useQuery } from "@tanstack/react-query";
import { z } from "zod";

const TypeLibsResponse = z.object({ libs: z.array(z.object({ path: z.string().min(1), text: z.string() })) });

async function fetchTypeLibs() {
  const res = await fetch("/api/type-libs");
  if (!res.ok) throw new Error(`GET /api/type-libs answered ${res.status}`);
  return TypeLibsResponse.parse(await res.json()).libs;
}

export function useTypeLibs() {
  return useQuery({ queryKey: ["type-libs"], queryFn: fetchTypeLibs, staleTime: Infinity, gcTime: Infinity, retry: 2 });
}
