import type { Metadata } from "next";
import { WorkspaceSettings } from "@/components/auth/workspace-settings";

export const metadata: Metadata = { title: "Team" };

export default function WorkspaceSettingsPage() {
  return <WorkspaceSettings />;
}
