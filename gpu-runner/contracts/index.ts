export * from "./config";
export * from "./chat";
export * from "./train";
export * from "./run";
export * from "./tasks";
