package turn_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

// recordHash is the SHA-256 (hex) of rec's JSON, as a parent names it.
func recordHash(t *testing.T, rec bindings.ProvenanceRecord) string {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestProvenanceNamesChildRecord: the parent's signed record names its
// child run's record by hash, embeds it, and verifies as a chain; the
// child's record is the one the child stored.
func TestProvenanceNamesChildRecord(t *testing.T) {
	f := researchFixture(t)
	res := f.mustInvoke(t, f.bindings(), "Research NDAs.")
	p := res.Provenance
	if p == nil || len(p.SubRuns) != 1 {
		t.Fatalf("provenance %+v, want one child", p)
	}
	sr := p.SubRuns[0]
	if sr.RunID != res.SubRuns[0].RunID || sr.AgentID != "acme.research" || sr.AgentVersion != "1.0.0" || sr.Status != string(turn.StatusCompleted) || sr.Record == nil {
		t.Fatalf("child entry %+v", sr)
	}
	stored, ok := f.store.Provenance(tenant, sr.RunID)
	if !ok {
		t.Fatal("the child stored no record")
	}
	if sr.RecordHash != recordHash(t, stored) {
		t.Errorf("the parent names hash %s, the child's stored record hashes to %s", sr.RecordHash, recordHash(t, stored))
	}
	if err := turn.VerifyProvenance(t.Context(), *p, f.keys); err != nil {
		t.Fatalf("VerifyProvenance of the parent: %v", err)
	}
	// The stored parent record (what a verifier reads) verifies too.
	if sp, ok := f.store.Provenance(tenant, res.RunID); !ok || turn.VerifyProvenance(t.Context(), sp, f.keys) != nil {
		t.Errorf("the stored parent record does not verify")
	}
	// A fold of the finished parent returns the same chain.
	again, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID}, f.bindings())
	if err != nil || again.Provenance == nil || len(again.Provenance.SubRuns) != 1 || again.Provenance.SubRuns[0].RecordHash != sr.RecordHash {
		t.Fatalf("folded parent: %v, %+v", err, again.Provenance)
	}
}

// TestProvenanceChainAfterChildPark: parent → child → gated tool; after
// the decision and a Resume the parent's record names the child's.
func TestProvenanceChainAfterChildPark(t *testing.T) {
	f := gatedTree(t)
	res := suspendOnChild(t, f)
	f.decide(res.Approvals, true)
	done, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID}, f.bindings())
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	checkTreeDone(t, f, done)
	p := done.Provenance
	if p == nil || len(p.SubRuns) != 1 || p.SubRuns[0].RunID != res.Approvals[0].RunID || p.SubRuns[0].RecordHash == "" {
		t.Fatalf("parent provenance %+v, want the child's record named", p)
	}
	if err := turn.VerifyProvenance(t.Context(), *p, f.keys); err != nil {
		t.Fatalf("VerifyProvenance: %v", err)
	}
}

// signed signs rec with the fixture's keys.
func signed(t *testing.T, f *fixture, rec bindings.ProvenanceRecord) bindings.ProvenanceRecord {
	t.Helper()
	if err := turn.SignProvenance(t.Context(), &rec, f.keys); err != nil {
		t.Fatalf("SignProvenance: %v", err)
	}
	return rec
}

// TestVerifyProvenanceChain: VerifyProvenance walks the tree of records
// built directly — a grandchild within a child within a parent — and a
// broken link anywhere (a child's record altered after signing, a hash
// that names another record, a missing record, a record of another run)
// fails it with invalid-message.
func TestVerifyProvenanceChain(t *testing.T) {
	f := newFixture(t, nil, nil)
	leaf := func(runID string) bindings.ProvenanceRecord {
		return bindings.ProvenanceRecord{TenantID: tenant, RunID: runID, AgentID: "acme.research", AgentVersion: "1.0.0", FlowID: turn.FlowID, FlowVersion: turn.FlowVersion,
			MessageHashes: []string{}, ToolCalls: []bindings.ProvenanceToolCall{}, RetrievedFacts: []string{}, Guardrails: []bindings.ProvenanceGuardrail{}}
	}
	link := func(child bindings.ProvenanceRecord) bindings.ProvenanceSubRun {
		c := child
		return bindings.ProvenanceSubRun{RunID: c.RunID, AgentID: c.AgentID, AgentVersion: c.AgentVersion, Status: "completed", RecordHash: recordHash(t, c), Record: &c}
	}
	grandchild := signed(t, f, leaf("p/c/g"))
	child := leaf("p/c")
	child.SubRuns = []bindings.ProvenanceSubRun{link(grandchild)}
	child = signed(t, f, child)
	build := func(edit func(*bindings.ProvenanceSubRun)) bindings.ProvenanceRecord {
		parent := leaf("p")
		l := link(child)
		if edit != nil {
			edit(&l)
		}
		parent.SubRuns = []bindings.ProvenanceSubRun{l, {RunID: "p/failed", AgentID: "acme.research", AgentVersion: "1.0.0", Status: "failed"}}
		return signed(t, f, parent)
	}
	if err := turn.VerifyProvenance(t.Context(), build(nil), f.keys); err != nil {
		t.Fatalf("the intact chain: %v", err)
	}
	tamperedGrandchild := child
	tamperedGrandchild.SubRuns = []bindings.ProvenanceSubRun{link(grandchild)}
	tamperedGrandchild.SubRuns[0].Record.Model = "forged"
	for name, edit := range map[string]func(*bindings.ProvenanceSubRun){
		"child altered": func(l *bindings.ProvenanceSubRun) {
			c := *l.Record
			c.Model = "forged"
			l.Record, l.RecordHash = &c, recordHash(t, c) // the hash follows, the child's signature does not
		},
		"hash of another record": func(l *bindings.ProvenanceSubRun) { l.RecordHash = recordHash(t, grandchild) },
		"record missing":         func(l *bindings.ProvenanceSubRun) { l.Record = nil },
		"record of another run":  func(l *bindings.ProvenanceSubRun) { l.RunID = "p/other" },
		"unnamed record":         func(l *bindings.ProvenanceSubRun) { l.RecordHash = "" },
		"grandchild altered": func(l *bindings.ProvenanceSubRun) {
			c := tamperedGrandchild
			l.Record, l.RecordHash = &c, recordHash(t, c)
		},
	} {
		err := turn.VerifyProvenance(t.Context(), build(edit), f.keys)
		if agents.CodeOf(err) != agents.CodeInvalidMessage {
			t.Errorf("%s: VerifyProvenance = %v, want invalid-message", name, err)
		}
	}
}
