package pgstore

import (
	"encoding/json"
	"time"
)

// Table names of the two tables hosts most often query directly (the
// TypeScript package's agentConversations and agentRunSnapshots).
const (
	ConversationsTable = "agent_conversations"
	RunSnapshotsTable  = "agent_run_snapshots"
)

// AgentConversationRow is a row of agent_conversations, for hosts that
// query the table directly: scan it with pgx.RowToStructByName. Reading
// through RLS needs kindgi.tenant_id set in the transaction.
// Title is free text as pgstore stores it: a title holding a NUL, a byte
// that is not UTF-8 or U+FDD0 is escaped with U+FDD0 (see the package
// documentation, "Values PostgreSQL refuses"); any other is as written.
type AgentConversationRow struct {
	TenantID       string     `db:"tenant_id"`
	ID             string     `db:"id"`
	ProjectID      string     `db:"project_id"`
	AgentID        string     `db:"agent_id"`
	AgentVersion   string     `db:"agent_version"`
	Title          string     `db:"title"`
	ParticipantID  string     `db:"participant_id"`
	Status         string     `db:"status"`
	TurnCount      int        `db:"turn_count"`
	MessageCount   int        `db:"message_count"`
	OpenedAt       time.Time  `db:"opened_at"`
	LastActivityAt time.Time  `db:"last_activity_at"`
	ClosedAt       *time.Time `db:"closed_at"`
}

// NewAgentConversationRow is the row to insert into agent_conversations:
// the columns without a default. (turn_count, message_count and closed_at
// start at 0, 0 and NULL; status defaults to open.)
type NewAgentConversationRow struct {
	TenantID       string    `db:"tenant_id"`
	ID             string    `db:"id"`
	ProjectID      string    `db:"project_id"`
	AgentID        string    `db:"agent_id"`
	AgentVersion   string    `db:"agent_version"`
	Title          string    `db:"title"`
	ParticipantID  string    `db:"participant_id"`
	OpenedAt       time.Time `db:"opened_at"`
	LastActivityAt time.Time `db:"last_activity_at"`
}

// AgentRunSnapshotRow is a row of agent_run_snapshots. Input is the JSONB
// envelope {v, doc} as stored: read the document with Unwrap.
type AgentRunSnapshotRow struct {
	TenantID       string          `db:"tenant_id"`
	RunID          string          `db:"run_id"`
	FlowID         string          `db:"flow_id"`
	FlowVersion    string          `db:"flow_version"`
	AgentID        string          `db:"agent_id"`
	AgentVersion   string          `db:"agent_version"`
	ConversationID string          `db:"conversation_id"`
	ProjectID      string          `db:"project_id"`
	Input          json.RawMessage `db:"input"`
	CreatedAt      time.Time       `db:"created_at"`
}

// NewAgentRunSnapshotRow is the row to insert into agent_run_snapshots;
// Input must be an envelope (Wrap).
type NewAgentRunSnapshotRow = AgentRunSnapshotRow
