import { HomeRedirect } from "@/components/home-redirect";

export default function HomePage() {
  return <HomeRedirect />;
}
