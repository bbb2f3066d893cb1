-- Brings a database that the thirteen files before the baseline migrated
-- (its version table records version 1 as 0001_agents.up.sql) to the
-- baseline's schema. Migrate runs it once, in the transaction that then
-- records version 1 as 0001_baseline.up.sql and forgets the legacy
-- versions 2–13. TestBaselineEqualsLegacySchema holds the result to the
-- baseline with pg_dump --schema-only.
--
-- Every change to the schema before the first release goes into both the
-- baseline and this file; after it, changes come as migrations 0002 and on.
SELECT 1;
