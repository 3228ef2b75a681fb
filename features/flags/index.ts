export { flagHref, type FlagFocus } from "./components/flag-links";
export { AlertsBell } from "./components/flags-bell";
export { RunFlagsBadge, RunFlagsStrip } from "./components/run-flags";
export { WebhookSettings } from "./components/webhook-settings";
