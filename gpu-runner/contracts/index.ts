export * from "./config";
export * from "./chat";
export * from "./train";
export * from "./run";
export * from "./experiment";
export * from "./mcp";
export * from "./tasks";
export * from "./bytes";
