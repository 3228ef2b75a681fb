import type { Metadata } from "next";
import { WorkspaceSettings } from "@/features/workspace/components/workspace-settings";

export const metadata: Metadata = { title: "Team" };

export default function WorkspaceSettingsPage() {
  return <WorkspaceSettings />;
}
