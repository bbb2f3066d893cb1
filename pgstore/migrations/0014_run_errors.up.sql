-- +goose Up
-- The failed drives of a run that did not end (bindings.RunError, written
-- by RecordRunError): the last failure's code, message and time, and how
-- many drives of the run failed, counted here so that the count holds
-- across every worker. Read only while the run has not ended: GetRun and
-- ListRuns return no error for a completed or failed run.
ALTER TABLE agent_runs
    ADD COLUMN IF NOT EXISTS last_error_code    text,
    ADD COLUMN IF NOT EXISTS last_error_message text,
    ADD COLUMN IF NOT EXISTS last_error_at      timestamptz,
    ADD COLUMN IF NOT EXISTS drive_attempts     integer NOT NULL DEFAULT 0;
