package journal_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/memstore"
)

// brokenJournal is a RunBinding whose ReadJournal fails.
type brokenJournal struct{ bindings.RunBinding }

func (brokenJournal) ReadJournal(context.Context, string, string) ([]bindings.JournalEntry, error) {
	return nil, errors.New("disk on fire")
}

func TestAdapterReleasesTheLeaseOfAFailedOpen(t *testing.T) {
	ctx := t.Context()
	s := memstore.New(nil)
	d := journal.Adapt(journal.Bindings{Snapshots: s, Runs: brokenJournal{s}, Conversations: s, Hitl: s})
	create := &journal.Create{Snapshot: bindings.RunSnapshotWriteInput{TenantID: "t", RunID: "r", FlowID: "agent.turn", FlowVersion: "1.1.0", Input: json.RawMessage(`{}`)}}
	_, err := d.Open(ctx, journal.OpenInput{TenantID: "t", RunID: "r", Owner: "w1", TTL: time.Minute, Create: create})
	if agents.CodeOf(err) != agents.CodeRunJournalUnavailable {
		t.Fatalf("Open of a new run whose journal cannot be read: %v, want run-journal-unavailable", err)
	}
	if _, err := s.AcquireLease(ctx, bindings.LeaseInput{TenantID: "t", RunID: "r", Owner: "w2", TTL: time.Minute}); err != nil {
		t.Fatalf("the failed Open kept its lease: %v", err)
	}
	must(t, s.ReleaseLease(ctx, "t", "r", "w2"))
	_, err = d.Open(ctx, journal.OpenInput{TenantID: "t", RunID: "r", Owner: "w1", TTL: time.Minute})
	if agents.CodeOf(err) != agents.CodeRunJournalUnavailable {
		t.Fatalf("Open of an existing run whose journal cannot be read: %v, want run-journal-unavailable", err)
	}
	if r, err := s.GetRun(ctx, "t", "r"); err != nil || r.LeaseOwner != "" {
		t.Fatalf("after a failed Open the run is %+v (%v), want its lease free", r, err)
	}
}

func TestAdapterRefusesAnotherDriversPending(t *testing.T) {
	s := memstore.New(nil)
	d := journal.Adapt(journal.Bindings{Snapshots: s, Runs: s, Conversations: s})
	_, err := d.Commit(t.Context(), journal.CommitInput{TenantID: "t", RunID: "r", Owner: "w",
		Pending: &journal.Pending{AsRead: &journal.AsRead{Run: bindings.Run{TenantID: "t", ID: "r"}}}})
	if agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Fatalf("Commit of a Pending the adapter never returns: %v, want invalid-message", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
