import type { Metadata } from "next";
import { InviteView } from "@/features/workspace/components/invite-view";

export const metadata: Metadata = { title: "Invite" };

export default async function InvitePage({ params }: { params: Promise<{ token: string }> }) {
  const { token } = await params;
  return (
    <div className="grid flex-1 place-items-center p-6">
      <InviteView token={decodeURIComponent(token)} />
    </div>
  );
}
