package turn

import (
	"context"
	"encoding/json"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/provsig"
)

// Provenance across the tree of a turn: the record of a turn that called
// sub-agents names each child run's record by hash and embeds it
// (bindings.ProvenanceSubRun), so that VerifyProvenance of the parent,
// with the key provider alone, checks every record of the tree; the
// record of a turn that handed over lists its handoffs and who answered.

// subRunProvenance is the provenance of the turn's child runs: for each,
// the record its persist-provenance step journaled (read from the child's
// own journal through the run binding: the child ended before the parent
// could get here) and that record's hash. A child that failed, or
// recorded none, is listed without one. Nil for a turn without children.
func (r *run) subRunProvenance(ctx context.Context) ([]bindings.ProvenanceSubRun, error) {
	if len(r.subRuns) == 0 {
		return nil, nil
	}
	out := make([]bindings.ProvenanceSubRun, 0, len(r.subRuns))
	for _, sr := range r.subRuns {
		ps := bindings.ProvenanceSubRun{RunID: sr.RunID, AgentID: sr.AgentID, AgentVersion: sr.AgentVersion, Status: string(sr.Status)}
		if sr.Status == StatusCompleted {
			rec, err := r.childRecord(ctx, sr.RunID)
			if err != nil {
				return nil, err
			}
			if rec != nil {
				h, err := provsig.RecordHash(*rec)
				if err != nil {
					return nil, &agents.PersistenceError{Op: "encode the provenance of child run " + sr.RunID, Err: err, Permanent: true}
				}
				ps.RecordHash, ps.Record = h, rec
			}
		}
		out = append(out, ps)
	}
	return out, nil
}

// childRecord is the provenance record child run childID journaled (nil
// when it recorded none).
func (r *run) childRecord(ctx context.Context, childID string) (*bindings.ProvenanceRecord, error) {
	entries, err := r.b.Runs.ReadJournal(ctx, r.tenantID, childID)
	if err != nil {
		return nil, coded(err, "read the journal of child run "+childID)
	}
	for i := len(entries) - 1; i >= 0; i-- {
		e := &entries[i]
		if e.Key != NodePersistProvenance || e.Status != bindings.StepCompleted {
			continue
		}
		var rec *bindings.ProvenanceRecord
		if err := json.Unmarshal(e.Output, &rec); err != nil {
			return nil, &agents.RunJournalUnavailableError{RunID: childID, Err: fmt.Errorf("decode step %s: %w", NodePersistProvenance, err)}
		}
		return rec, nil
	}
	return nil, nil
}

// handoffList is the turn's handoffs for its provenance (nil: none).
func (r *run) handoffList() []bindings.ProvenanceHandoff {
	if r.handoffs == nil {
		return nil
	}
	return r.handoffs.done
}

// answeredBy is the answering agent for the provenance record when a
// handoff made it another than the run's ("" otherwise).
func (r *run) answeredBy() string {
	if r.handoffs == nil || len(r.handoffs.done) == 0 {
		return ""
	}
	return r.in.Agent.ID + "@" + r.in.Agent.Version
}

// runAgent is the run's own agent: the one that made the turn's first
// handoff, or the drive's agent when there was none.
func (r *run) runAgent() (id, version string) {
	if h := r.handoffs; h != nil && len(h.done) > 0 {
		return h.done[0].FromAgentID, h.done[0].FromAgentVersion
	}
	return r.in.Agent.ID, r.in.Agent.Version
}
