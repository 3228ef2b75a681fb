"use client";
/**
 * The signed-out page. On a fresh install (no user yet) it is one form that creates the owner account; later
 * it signs in, or signs up when the server allows it (each new user gets a workspace of their own and joins
 * others through invite links).
 */
import { useQuery } from "@tanstack/react-query";
import { useSearchParams } from "next/navigation";
import { useState, type FormEvent } from "react";
import { useTRPC } from "@/components/trpc";
import { Button, ErrorBox, Spinner } from "@/components/ui/primitives";
import { authClient, authErrorMessage } from "@/components/auth/auth-client";
import { TextField } from "@/components/ui/text-field";

/** Only same-site paths: `next` must not send the user to another site after signing in. */
function safeNext(next: string | null): string {
  return next && next.startsWith("/") && !next.startsWith("//") ? next : "/";
}

export function SignInForm() {
  const trpc = useTRPC();
  const params = useSearchParams();
  const next = safeNext(params.get("next"));
  const setup = useQuery(trpc.account.setupState.queryOptions());
  const [mode, setMode] = useState<"sign-in" | "sign-up">(params.get("mode") === "sign-up" ? "sign-up" : "sign-in");
  const [name, setName] = useState("");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  if (setup.isPending) return <Spinner label="Loading" />;
  if (setup.error) return <ErrorBox title="Could not reach the server">{setup.error.message}</ErrorBox>;
  const owner = setup.data.needsOwner;
  const signingUp = owner || mode === "sign-up";

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const res = signingUp
      ? await authClient.signUp.email({ name: name.trim() || email.split("@")[0]!, email: email.trim(), password })
      : await authClient.signIn.email({ email: email.trim(), password });
    setBusy(false);
    if (res.error) return setError(authErrorMessage(res.error));
    window.location.assign(next);
  }

  return (
    <form onSubmit={(e) => void submit(e)} className="flex w-80 flex-col gap-3" aria-label={signingUp ? "Create account" : "Sign in"}>
      <h1 className="text-lg font-semibold text-zinc-100">
        {owner ? "Create the owner account" : signingUp ? "Create an account" : "Sign in to Rollbook"}
      </h1>
      {owner && (
        <p className="text-[13px] text-zinc-400">
          Nobody has signed up on this server yet. This account will own the workspace and everything in it; invite your team
          from the Team page afterwards.
        </p>
      )}
      {signingUp && <TextField label="Name" name="name" autoComplete="name" value={name} onChange={(e) => setName(e.target.value)} />}
      <TextField label="Email" name="email" type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
      <TextField
        label="Password"
        name="password"
        type="password"
        autoComplete={signingUp ? "new-password" : "current-password"}
        required
        minLength={signingUp ? 8 : undefined}
        value={password}
        onChange={(e) => setPassword(e.target.value)}
      />
      {error && (
        <p role="alert" data-testid="auth-error" className="text-[13px] text-red-300">
          {error}
        </p>
      )}
      <Button type="submit" variant="primary" disabled={busy} className="justify-center">
        {busy ? "…" : owner ? "Create owner account" : signingUp ? "Create account" : "Sign in"}
      </Button>
      {!owner && setup.data.signUpOpen && (
        <button type="button" className="text-left text-[12px] text-zinc-400 underline" onClick={() => setMode(signingUp ? "sign-in" : "sign-up")}>
          {signingUp ? "Have an account? Sign in" : "New here? Create an account"}
        </button>
      )}
      {setup.data.providers.map((p) => (
        <Button key={p} onClick={() => void authClient.signIn.social({ provider: p, callbackURL: next })} className="justify-center">
          Continue with {p[0]!.toUpperCase() + p.slice(1)}
        </Button>
      ))}
    </form>
  );
}
