export { onUserCreated, signUpAllowed } from "./accounts";
export { API_TOKEN_PREFIX, authenticateApiToken, createApiToken, revokeApiToken } from "./api-tokens";
export { ensureBundledMcpServers, setMcpServer } from "./config/mcp-servers";
export { runReferenceDiagnostics, workspaceRunSpec } from "./config/run-references";
export { setSecret } from "./config/secrets";
export { defaultExperimentId, ensureDefaultExperiment, ensureDefaultWorkspace } from "./default-workspace";
export { acceptInvite, createInvite } from "./invites";
export { removeMember } from "./members";
export { isInstanceOperator } from "./operator";
