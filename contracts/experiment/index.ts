export * from "./files";
export * from "./json-position";
export * from "./config-parse";
export * from "./compiler-flags";
export * from "./mcp-servers-paste";
