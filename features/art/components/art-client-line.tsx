/** The run page's header line for an ART run: where its code runs (the ART client, with which token) and its entity/project/name. */
import type { ArtClientInfo } from "../schema";

/** `kind` "tinker": a Tinker SDK client's run (features/tinker), which records the same client info. */
export function ArtClientLine({ client, kind = "art" }: { client: ArtClientInfo; kind?: string }) {
  return (
    <div className="mt-1 text-[12px] text-zinc-500" data-testid="art-client">
      {kind === "tinker" ? "Tinker" : "ART"} client, {client.tokenName ? <>token <span className="font-mono text-zinc-300">{client.tokenName}</span></> : "signed-in session"} ·{" "}
      <span className="font-mono text-zinc-400">
        {client.entity}/{client.project}/{client.name}
      </span>
    </div>
  );
}
