"use client";
import Link from "next/link";
import { usePathname } from "next/navigation";
import { AlertsBell } from "@/features/flags";
import { UserMenu } from "@/features/workspace";
import { CommandPalette } from "./command-palette";
import { isPublicPath } from "./auth/unauthorized";

const LINKS = [
  { href: "/experiments", label: "Experiments" },
  { href: "/runs", label: "Runs" },
] as const;

export function TopNav() {
  const pathname = usePathname();
  const signedOutPage = isPublicPath(pathname);
  return (
    <header className="flex h-11 shrink-0 items-center gap-6 border-b border-zinc-800 bg-zinc-900/80 px-4">
      <Link href="/" className="flex items-center gap-2 font-semibold tracking-tight text-zinc-100">
        {/* A static file from public/ (served as is, cached by the browser), not a bundled component. */}
        <img src="/logo.svg" alt="" width={20} height={20} className="h-5 w-5" />
        Rollbook
      </Link>
      {!signedOutPage && <nav aria-label="Main" className="flex items-center gap-1">
        {LINKS.map((l) => {
          const active = pathname === l.href || pathname.startsWith(`${l.href}/`);
          return (
            <Link
              key={l.href}
              href={l.href}
              aria-current={active ? "page" : undefined}
              className={`rounded px-2.5 py-1 text-[13px] ${
                active ? "bg-zinc-800 text-zinc-100" : "text-zinc-400 hover:bg-zinc-800/60 hover:text-zinc-200"
              }`}
            >
              {l.label}
            </Link>
          );
        })}
      </nav>}
      {!signedOutPage && <UserMenu />}
      {!signedOutPage && <AlertsBell />}
      {!signedOutPage && <CommandPalette />}
    </header>
  );
}
