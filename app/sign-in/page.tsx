import type { Metadata } from "next";
import { Suspense } from "react";
import { SignInForm } from "@/features/workspace/components/sign-in-form";

export const metadata: Metadata = { title: "Sign in" };

export default function SignInPage() {
  return (
    <div className="grid flex-1 place-items-center p-6">
      <Suspense>
        <SignInForm />
      </Suspense>
    </div>
  );
}
