package memstore

import (
	"context"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// Write stores a run snapshot once: a second write of the same (tenant,
// run id) keeps the first and returns nil.
func (s *Store) Write(ctx context.Context, in bindings.RunSnapshotWriteInput) error {
	_, _, err := s.write(ctx, in)
	return err
}

// write is Write; it also returns whether this call stored the snapshot,
// and then the record stored (its Input the caller's bytes, not the
// store's copy).
func (s *Store) write(ctx context.Context, in bindings.RunSnapshotWriteInput) (bindings.RunSnapshotRecord, bool, error) {
	fail := func(err error) (bindings.RunSnapshotRecord, bool, error) {
		return bindings.RunSnapshotRecord{}, false, err
	}
	if err := alive(ctx); err != nil {
		return fail(err)
	}
	switch {
	case in.TenantID == "":
		return fail(invalid("tenant id is empty"))
	case in.RunID == "":
		return fail(invalid("run id is empty"))
	}
	if err := firstErr(bindings.CheckID("tenant id", in.TenantID), bindings.CheckID("run id", in.RunID),
		bindings.CheckOptionalID("flow id", in.FlowID), bindings.CheckOptionalID("flow version", in.FlowVersion),
		bindings.CheckOptionalID("agent id", in.AgentID), bindings.CheckOptionalID("agent version", in.AgentVersion),
		bindings.CheckOptionalID("conversation id", in.ConversationID), bindings.CheckOptionalID("project id", in.ProjectID),
		bindings.CheckJSON("snapshot input", in.Input)); err != nil {
		return fail(err)
	}
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	k := key{in.TenantID, in.RunID}
	if _, ok := s.snapshots[k]; ok {
		return fail(nil)
	}
	if in.CreatedAt.IsZero() {
		in.CreatedAt = s.now()
	}
	stored := in
	stored.Input = cloneJSON(in.Input)
	s.snapshots[k] = stored
	return in, true, nil
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
