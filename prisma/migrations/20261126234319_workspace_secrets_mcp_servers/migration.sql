-- CreateTable
CREATE TABLE "WorkspaceSecret" (
    "id" TEXT NOT NULL,
    "workspaceId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "cipher" TEXT NOT NULL,
    "updatedById" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "WorkspaceSecret_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "McpServerDefinition" (
    "id" TEXT NOT NULL,
    "workspaceId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "definition" JSONB NOT NULL,
    "updatedById" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "McpServerDefinition_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "WorkspaceSecret_workspaceId_name_key" ON "WorkspaceSecret"("workspaceId", "name");

-- CreateIndex
CREATE UNIQUE INDEX "McpServerDefinition_workspaceId_name_key" ON "McpServerDefinition"("workspaceId", "name");

-- AddForeignKey
ALTER TABLE "WorkspaceSecret" ADD CONSTRAINT "WorkspaceSecret_workspaceId_fkey" FOREIGN KEY ("workspaceId") REFERENCES "Workspace"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "WorkspaceSecret" ADD CONSTRAINT "WorkspaceSecret_updatedById_fkey" FOREIGN KEY ("updatedById") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "McpServerDefinition" ADD CONSTRAINT "McpServerDefinition_workspaceId_fkey" FOREIGN KEY ("workspaceId") REFERENCES "Workspace"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "McpServerDefinition" ADD CONSTRAINT "McpServerDefinition_updatedById_fkey" FOREIGN KEY ("updatedById") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- Existing workspaces get the bundled server-everything registered, as new ones do (server/services/mcp-servers.ts:
-- BUNDLED_MCP_SERVERS), so the mcp-agent template keeps working after experiments stop naming commands.
INSERT INTO "McpServerDefinition" ("id", "workspaceId", "name", "definition", "createdAt", "updatedAt")
SELECT 'mcpdef_' || "id", "id", 'everything',
       '{"command": "mcp-server-everything", "args": [], "env": {}, "network": false, "description": "The MCP project''s test server (npm @modelcontextprotocol/server-everything), bundled with Rollbook"}'::jsonb,
       CURRENT_TIMESTAMP, CURRENT_TIMESTAMP
FROM "Workspace";
