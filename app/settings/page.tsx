import type { Metadata } from "next";
import { AccountSettings } from "@/features/workspace/components/account-settings";

export const metadata: Metadata = { title: "Account" };

export default function SettingsPage() {
  return <AccountSettings />;
}
