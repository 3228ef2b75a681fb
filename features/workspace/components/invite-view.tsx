"use client";
/** /invite/<token>: what the link offers, then Join (signed in) or sign in / create an account first. */
import { useMutation, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useEffect, useState } from "react";
import { useTRPC } from "@/components/trpc";
import { Button, ErrorBox, Spinner } from "@/components/ui/primitives";
import { INVITE_COOKIE } from "@/contracts/cookies";
import { switchWorkspace } from "@/components/auth/workspace-cookie";


export function InviteView({ token }: { token: string }) {
  const trpc = useTRPC();
  const invite = useQuery({ ...trpc.account.describeInvite.queryOptions({ token }), retry: false });
  const me = useQuery({ ...trpc.account.me.queryOptions(), retry: false });
  const [error, setError] = useState<string | null>(null);
  const accept = useMutation(
    trpc.account.acceptInvite.mutationOptions({
      onSuccess: (res) => switchWorkspace(res.workspaceId, "/runs"),
      onError: (e) => setError(e.message),
    }),
  );
  useEffect(() => {
    document.cookie = `${INVITE_COOKIE}=${encodeURIComponent(token)}; path=/; max-age=3600; samesite=lax`;
  }, [token]);

  if (invite.isPending || me.isPending) return <Spinner label="Checking the invite" />;
  if (invite.error) return <ErrorBox title="Invite">{invite.error.message}</ErrorBox>;
  const here = `/invite/${encodeURIComponent(token)}`;
  return (
    <div className="flex w-96 flex-col gap-3 text-[13px] text-zinc-300">
      <h1 className="text-lg font-semibold text-zinc-100">Join {invite.data.workspaceName}</h1>
      <p>
        {invite.data.invitedBy} invited you as <strong className="text-zinc-100">{invite.data.role}</strong>. The link expires{" "}
        {invite.data.expiresAt.toLocaleString()}.
      </p>
      {me.data ? (
        <>
          <p className="text-zinc-400">
            Signed in as {me.data.name} ({me.data.email}).
          </p>
          <Button variant="primary" className="justify-center" disabled={accept.isPending} onClick={() => accept.mutate({ token })}>
            Join workspace
          </Button>
        </>
      ) : (
        <div className="flex gap-2">
          <Link className="underline" href={`/sign-in?next=${encodeURIComponent(here)}`}>
            Sign in to join
          </Link>
          <span className="text-zinc-600">or</span>
          <Link className="underline" href={`/sign-in?mode=sign-up&next=${encodeURIComponent(here)}`}>
            create an account
          </Link>
        </div>
      )}
      {error && (
        <p role="alert" className="text-red-300">
          {error}
        </p>
      )}
    </div>
  );
}
