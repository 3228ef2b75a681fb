export { RunnersSettings, fieldOfError } from "./components/runners-settings";
