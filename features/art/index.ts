/** The ART slice's browser-safe entry: what the run page shows of an ART run's client. */
export { ArtClientInfo, readArtClient } from "./schema";
export { ArtClientLine } from "./components/art-client-line";
export { ART_CLIENT_IDLE_MS, artIdleBadge, artIdleSince } from "./art-idle";
