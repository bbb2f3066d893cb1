-- Brings a database that the thirteen files before the baseline migrated
-- (its version table records version 1 as 0001_agents.up.sql) to the
-- baseline's schema. Migrate runs it once, in the transaction that then
-- records version 1 as 0001_baseline.up.sql and forgets the legacy
-- versions 2–13. TestBaselineEqualsLegacySchema holds the result to the
-- baseline with pg_dump --schema-only.
--
-- Every change to the schema before the first release goes into both the
-- baseline and this file; after it, changes come as migrations 0002 and on.

-- bindings.Run.LastError: the failed drives of a run that did not end.
ALTER TABLE agent_runs
    ADD COLUMN IF NOT EXISTS last_error_code    text,
    ADD COLUMN IF NOT EXISTS last_error_message text,
    ADD COLUMN IF NOT EXISTS last_error_at      timestamptz,
    ADD COLUMN IF NOT EXISTS drive_attempts     integer NOT NULL DEFAULT 0;
