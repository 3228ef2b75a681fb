"use client";
import type { InputHTMLAttributes } from "react";

export function TextField({ label, ...props }: InputHTMLAttributes<HTMLInputElement> & { label: string }) {
  return (
    <label className="flex flex-col gap-1 text-[13px] text-zinc-300">
      {label}
      <input
        className="h-8 rounded border border-zinc-700 bg-zinc-950 px-2 text-[13px] text-zinc-100 outline-none focus:border-amber-400"
        {...props}
      />
    </label>
  );
}
