package memstore

import (
	"context"
	"slices"

	"github.com/kindgi/agents/bindings"
)

// cloneProvenance deep-copies r, keeping empty lists empty rather than nil:
// the signature covers the record's JSON, where [] and null differ.
func cloneProvenance(r bindings.ProvenanceRecord) bindings.ProvenanceRecord {
	r.MessageHashes = slices.Clone(r.MessageHashes)
	r.RetrievedFacts = slices.Clone(r.RetrievedFacts)
	r.ToolCalls = slices.Clone(r.ToolCalls)
	r.Guardrails = slices.Clone(r.Guardrails)
	r.Signature = slices.Clone(r.Signature)
	r.Handoffs = slices.Clone(r.Handoffs)
	r.SubRuns = slices.Clone(r.SubRuns)
	for i := range r.SubRuns {
		if c := r.SubRuns[i].Record; c != nil {
			cc := cloneProvenance(*c)
			r.SubRuns[i].Record = &cc
		}
	}
	return r
}

// Emit stores a provenance record; a second record of the same (tenant,
// run id) keeps the first.
func (s *Store) Emit(ctx context.Context, rec bindings.ProvenanceRecord) error {
	if err := alive(ctx); err != nil {
		return err
	}
	switch {
	case rec.TenantID == "":
		return invalid("tenant id is empty")
	case rec.RunID == "":
		return invalid("run id is empty")
	}
	if err := firstErr(bindings.CheckID("tenant id", rec.TenantID), bindings.CheckID("run id", rec.RunID),
		bindings.CheckOptionalID("conversation id", rec.ConversationID)); err != nil {
		return err
	}
	s.provMu.Lock()
	defer s.provMu.Unlock()
	k := key{rec.TenantID, rec.RunID}
	if _, ok := s.provenance[k]; ok {
		return nil
	}
	s.provenance[k] = len(s.provOrder)
	s.provOrder = append(s.provOrder, cloneProvenance(rec))
	return nil
}

// Provenance returns the record emitted for a tenant's run; ok is false
// when there is none.
func (s *Store) Provenance(tenantID, runID string) (rec bindings.ProvenanceRecord, ok bool) {
	s.provMu.RLock()
	defer s.provMu.RUnlock()
	i, ok := s.provenance[key{tenantID, runID}]
	if !ok {
		return bindings.ProvenanceRecord{}, false
	}
	return cloneProvenance(s.provOrder[i]), true
}

// ProvenanceRecords returns a tenant's records in the order they were
// emitted.
func (s *Store) ProvenanceRecords(tenantID string) []bindings.ProvenanceRecord {
	s.provMu.RLock()
	defer s.provMu.RUnlock()
	var out []bindings.ProvenanceRecord
	for _, r := range s.provOrder {
		if r.TenantID == tenantID {
			out = append(out, cloneProvenance(r))
		}
	}
	return out
}
