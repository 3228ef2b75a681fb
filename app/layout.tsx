import type { Metadata } from "next";
import type { ReactNode } from "react";
import "./globals.css";
import { Providers } from "@/components/providers";
import { TopNav } from "@/components/nav";

export const metadata: Metadata = {
  title: { default: "Rollbook", template: "%s · Rollbook" },
  description: "A notebook for RL training of LLM agents: write a scenario and reward, run, watch rollouts live.",
  icons: { icon: "/icon.svg" },
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <Providers>
          <div className="flex h-full flex-col">
            <TopNav />
            <main className="flex min-h-0 flex-1 flex-col">{children}</main>
          </div>
        </Providers>
      </body>
    </html>
  );
}
