/** The run page's header line for an ART run: where its code runs (the ART client, with which token) and its entity/project/name. */
import type { ArtClientInfo } from "../schema";

export function ArtClientLine({ client }: { client: ArtClientInfo }) {
  return (
    <div className="mt-1 text-[12px] text-zinc-500" data-testid="art-client">
      ART client, {client.tokenName ? <>token <span className="font-mono text-zinc-300">{client.tokenName}</span></> : "signed-in session"} ·{" "}
      <span className="font-mono text-zinc-400">
        {client.entity}/{client.project}/{client.name}
      </span>
    </div>
  );
}
