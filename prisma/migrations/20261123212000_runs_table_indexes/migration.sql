-- Indexes for the runs table (server/services/runs-table.ts): filters, tag filter and text search.

-- CreateIndex
CREATE INDEX "Run_workspaceId_status_createdAt_idx" ON "Run"("workspaceId", "status", "createdAt");

-- CreateIndex
CREATE INDEX "Run_tags_idx" ON "Run" USING GIN ("tags");

-- Hand-written: the text searched in a run (its tags and notes) as one tsvector. array_to_string is only
-- STABLE, so an index expression cannot call it directly. This wrapper is IMMUTABLE, which holds because
-- text[] elements print the same whatever the settings. The 'simple' configuration lower-cases words and
-- drops no stop words, so tags such as "baseline" or "lr-1e-5" are found as typed. Queries must call the
-- very same expression for the planner to use the index below.
CREATE FUNCTION rollbook_run_search_doc(tags text[], notes text) RETURNS tsvector
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT to_tsvector('simple'::regconfig, array_to_string(tags, ' ') || ' ' || notes) $$;

-- Hand-written: Prisma cannot express an expression index (kept out of schema.prisma, see the Run model).
CREATE INDEX "Run_search_idx" ON "Run" USING GIN (rollbook_run_search_doc("tags", "notes"));
