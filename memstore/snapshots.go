package memstore

import (
	"context"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// Write stores a run snapshot once: a second write of the same (tenant,
// run id) keeps the first and returns nil.
func (s *Store) Write(ctx context.Context, in bindings.RunSnapshotWriteInput) error {
	if err := alive(ctx); err != nil {
		return err
	}
	switch {
	case in.TenantID == "":
		return invalid("tenant id is empty")
	case in.RunID == "":
		return invalid("run id is empty")
	}
	if err := firstErr(bindings.CheckID("tenant id", in.TenantID), bindings.CheckID("run id", in.RunID),
		bindings.CheckOptionalID("flow id", in.FlowID), bindings.CheckOptionalID("flow version", in.FlowVersion),
		bindings.CheckOptionalID("agent id", in.AgentID), bindings.CheckOptionalID("agent version", in.AgentVersion),
		bindings.CheckOptionalID("conversation id", in.ConversationID), bindings.CheckOptionalID("project id", in.ProjectID),
		bindings.CheckJSON("snapshot input", in.Input)); err != nil {
		return err
	}
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	k := key{in.TenantID, in.RunID}
	if _, ok := s.snapshots[k]; ok {
		return nil
	}
	if in.CreatedAt.IsZero() {
		in.CreatedAt = s.now()
	}
	in.Input = cloneJSON(in.Input)
	s.snapshots[k] = in
	return nil
}

// Read returns a run's snapshot, or *agents.RunSnapshotMissingError.
func (s *Store) Read(ctx context.Context, tenantID, runID string) (bindings.RunSnapshotRecord, error) {
	if err := alive(ctx); err != nil {
		return bindings.RunSnapshotRecord{}, err
	}
	if err := checkLookup(tenantID, "run id", runID); err != nil {
		return bindings.RunSnapshotRecord{}, err
	}
	s.snapMu.RLock()
	defer s.snapMu.RUnlock()
	rec, ok := s.snapshots[key{tenantID, runID}]
	if !ok {
		return bindings.RunSnapshotRecord{}, &agents.RunSnapshotMissingError{RunID: runID}
	}
	rec.Input = cloneJSON(rec.Input)
	return rec, nil
}
