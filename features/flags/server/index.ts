export { postIngestSettled, schedulePostIngest } from "./detect/after-ingest";
export { raiseAlert } from "./notify/alerts";
export { deliverDue } from "./notify/delivery";
export { AlertsWatcher } from "./notify/watcher";
export { setWebhook } from "./notify/webhook-settings";
export { pearson } from "./detect/rules/shared";
