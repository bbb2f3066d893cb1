package turn

import (
	"context"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/provsig"
)

// Provenance across the tree of a turn: the record of a turn that called
// sub-agents names each child run's record by hash and embeds it
// (bindings.ProvenanceSubRun), so that VerifyProvenance of the parent,
// with the key provider alone, checks every record of the tree; the
// record of a turn that handed over lists its handoffs and who answered.

// subRunProvenance is the provenance of the turn's child runs: for each,
// the record its persist-provenance step journaled and that record's hash
// (provsig.AddSubRuns). A child that failed, or recorded none, is listed
// without one. Nil for a turn without children.
func (r *run) subRunProvenance(ctx context.Context) ([]bindings.ProvenanceSubRun, error) {
	if len(r.subRuns) == 0 {
		return nil, nil
	}
	out := make([]bindings.ProvenanceSubRun, 0, len(r.subRuns))
	for _, sr := range r.subRuns {
		out = append(out, bindings.ProvenanceSubRun{RunID: sr.RunID, AgentID: sr.AgentID, AgentVersion: sr.AgentVersion, Status: string(sr.Status)})
	}
	if err := provsig.AddSubRuns(ctx, r.b.Runs, r.tenantID, out, string(StatusCompleted), NodePersistProvenance); err != nil {
		return nil, err
	}
	return out, nil
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
