package memstore

import (
	"context"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/frozen"
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
	if err := checkSnapshot(&in); err != nil {
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
	s.snapshots[k] = newSnapRec(&in)
	return in, true, nil
}

// checkSnapshot is what Write checks of a snapshot.
func checkSnapshot(in *bindings.RunSnapshotWriteInput) error {
	switch {
	case in.TenantID == "":
		return invalid("tenant id is empty")
	case in.RunID == "":
		return invalid("run id is empty")
	}
	return firstErr(bindings.CheckID("tenant id", in.TenantID), bindings.CheckID("run id", in.RunID),
		bindings.CheckOptionalID("flow id", in.FlowID), bindings.CheckOptionalID("flow version", in.FlowVersion),
		bindings.CheckOptionalID("agent id", in.AgentID), bindings.CheckOptionalID("agent version", in.AgentVersion),
		bindings.CheckOptionalID("conversation id", in.ConversationID), bindings.CheckOptionalID("project id", in.ProjectID),
		bindings.CheckJSON("snapshot input", in.Input))
}

// snapRec is a stored snapshot in a form the garbage collector marks
// cheaply (a Store keeps every snapshot, and each GC cycle marks them all
// again): its strings and input copied into one text, back to back, in
// the order of snapTexts; the tenant and run id are the map key's. A
// bindings.RunSnapshotRecord holds eleven pointers, a snapRec two (the
// text and the time's location).
type snapRec struct {
	text    []byte // never written to once stored
	lens    [snapTexts]uint32
	created time.Time
}

// The texts of a snapRec, in their order in its text.
const (
	snapFlowID = iota
	snapFlowVersion
	snapAgentID
	snapAgentVersion
	snapConversationID
	snapProjectID
	snapInput
	snapTexts
)

// newSnapRec returns the record of in, copying its strings and input.
func newSnapRec(in *bindings.RunSnapshotWriteInput) snapRec {
	strs := [snapInput]string{in.FlowID, in.FlowVersion, in.AgentID, in.AgentVersion, in.ConversationID, in.ProjectID}
	rec := snapRec{created: in.CreatedAt}
	need := len(in.Input)
	for i, str := range strs {
		rec.lens[i] = uint32(len(str))
		need += len(str)
	}
	rec.lens[snapInput] = uint32(len(in.Input))
	b := make([]byte, 0, need)
	for _, str := range strs {
		b = append(b, str...)
	}
	rec.text = append(b, in.Input...)
	return rec
}

// record returns the snapshot of k as a RunSnapshotRecord: its strings
// alias the text, its input is a copy (nil when empty, as cloneJSON gives
// it).
func (rec *snapRec) record(k key) bindings.RunSnapshotRecord {
	var parts [snapTexts][]byte
	off := uint32(0)
	for i, n := range rec.lens {
		parts[i] = rec.text[off : off+n : off+n]
		off += n
	}
	str := frozen.String
	return bindings.RunSnapshotRecord{
		TenantID: k.tenant, RunID: k.id,
		FlowID: str(parts[snapFlowID]), FlowVersion: str(parts[snapFlowVersion]),
		AgentID: str(parts[snapAgentID]), AgentVersion: str(parts[snapAgentVersion]),
		ConversationID: str(parts[snapConversationID]), ProjectID: str(parts[snapProjectID]),
		Input: cloneJSON(parts[snapInput]), CreatedAt: rec.created,
	}
}

// Read returns a run's snapshot, or *agents.RunSnapshotMissingError.
func (s *Store) Read(ctx context.Context, tenantID, runID string) (bindings.RunSnapshotRecord, error) {
	if err := lookupCall(ctx, tenantID, "run id", runID); err != nil {
		return bindings.RunSnapshotRecord{}, err
	}
	s.snapMu.RLock()
	defer s.snapMu.RUnlock()
	k := key{tenantID, runID}
	rec, ok := s.snapshots[k]
	if !ok {
		return bindings.RunSnapshotRecord{}, &agents.RunSnapshotMissingError{RunID: runID}
	}
	return rec.record(k), nil
}
