import type { Metadata } from "next";
import { AccountSettings } from "@/components/auth/account-settings";

export const metadata: Metadata = { title: "Account" };

export default function SettingsPage() {
  return <AccountSettings />;
}
