export { checkFresh, codeHash, filesHash, latestIfSame, parseStoredFiles, saveVersion, tasksHash, withNumberRetry, writeVersion } from "./experiments";
export { listTemplates, readExperimentDir, readTemplate } from "./templates";
