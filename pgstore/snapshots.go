package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

const sqlWriteSnapshot = `INSERT INTO agent_run_snapshots
	(tenant_id, run_id, flow_id, flow_version, agent_id, agent_version, conversation_id, project_id, input, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
	ON CONFLICT (tenant_id, run_id) DO NOTHING`

const sqlReadSnapshot = `SELECT tenant_id, run_id, flow_id, flow_version, agent_id, agent_version,
	conversation_id, project_id, input, created_at
	FROM agent_run_snapshots WHERE tenant_id = $1 AND run_id = $2`

// Write implements bindings.RunSnapshotBinding: the first snapshot of a run
// is kept, a later write of the same run stores nothing.
func (s *Store) Write(ctx context.Context, in bindings.RunSnapshotWriteInput) error {
	switch {
	case in.TenantID == "":
		return invalid("tenant id is empty")
	case in.RunID == "":
		return invalid("run id is empty")
	}
	if err := checkSnapshot(in); err != nil {
		return err
	}
	input, err := wrapOpt("snapshot input", in.Input)
	if err != nil {
		return err
	}
	at := s.stamp(in.CreatedAt)
	_, err = s.exec(ctx, "write run snapshot", in.TenantID, sqlWriteSnapshot,
		in.TenantID, in.RunID, in.FlowID, in.FlowVersion, in.AgentID, in.AgentVersion, in.ConversationID, in.ProjectID, jsonArg(input), at)
	return err
}

// Read implements bindings.RunSnapshotBinding.
func (s *Store) Read(ctx context.Context, tenantID, runID string) (bindings.RunSnapshotRecord, error) {
	return getByID(ctx, s, "read run snapshot", tenantID, "run id", runID, nil, sqlReadSnapshot, scanSnapshot,
		func() error { return &agents.RunSnapshotMissingError{RunID: runID} })
}

func scanSnapshot(row pgx.CollectableRow) (bindings.RunSnapshotRecord, error) {
	var r bindings.RunSnapshotRecord
	var input []byte
	err := row.Scan(&r.TenantID, &r.RunID, &r.FlowID, &r.FlowVersion, &r.AgentID, &r.AgentVersion,
		&r.ConversationID, &r.ProjectID, &input, &r.CreatedAt)
	if err != nil {
		return r, err
	}
	r.CreatedAt = utc(r.CreatedAt)
	r.Input, err = unwrapOpt(input)
	return r, err
}

// checkSnapshot checks the ids of a snapshot to write.
func checkSnapshot(in bindings.RunSnapshotWriteInput) error {
	return firstErr(bindings.CheckID("tenant id", in.TenantID), bindings.CheckID("run id", in.RunID),
		bindings.CheckOptionalID("flow id", in.FlowID), bindings.CheckOptionalID("flow version", in.FlowVersion),
		bindings.CheckOptionalID("agent id", in.AgentID), bindings.CheckOptionalID("agent version", in.AgentVersion),
		bindings.CheckOptionalID("conversation id", in.ConversationID), bindings.CheckOptionalID("project id", in.ProjectID))
}
