package journal_test

import (
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

func TestCheckOpenRefusesWhatNoDriverAccepts(t *testing.T) {
	ok := journal.OpenInput{TenantID: "t", RunID: "r", Owner: "w", Create: &journal.Create{Snapshot: bindings.RunSnapshotWriteInput{TenantID: "t", RunID: "r"}}}
	if err := journal.CheckOpen(ok); err != nil {
		t.Fatalf("CheckOpen(%+v) = %v", ok, err)
	}
	for name, edit := range map[string]func(*journal.OpenInput){
		"no tenant":             func(in *journal.OpenInput) { in.TenantID = "" },
		"no run":                func(in *journal.OpenInput) { in.RunID = "" },
		"unknown lease mode":    func(in *journal.OpenInput) { in.Lease = 9 },
		"negative TTL":          func(in *journal.OpenInput) { in.TTL = -1 },
		"negative history":      func(in *journal.OpenInput) { in.HistoryLimit = -1 },
		"held lease of new run": func(in *journal.OpenInput) { in.Lease = journal.LeaseHeld },
		"snapshot of another": func(in *journal.OpenInput) {
			in.Create = &journal.Create{Snapshot: bindings.RunSnapshotWriteInput{TenantID: "t", RunID: "x"}}
		},
		"finished new run": func(in *journal.OpenInput) {
			in.Create = &journal.Create{Snapshot: bindings.RunSnapshotWriteInput{TenantID: "t", RunID: "r"}, Status: bindings.RunCompleted}
		},
	} {
		in := ok
		edit(&in)
		if err := journal.CheckOpen(in); agents.CodeOf(err) != agents.CodeInvalidMessage {
			t.Errorf("%s: CheckOpen = %v, want invalid-message", name, err)
		}
	}
}

func TestCheckCommitRefusesWhatNoDriverAccepts(t *testing.T) {
	entries := []bindings.JournalEntry{{Key: "k", Status: bindings.StepCompleted}}
	ok := journal.CommitInput{TenantID: "t", RunID: "r", Owner: "w", Entries: entries,
		Message: &journal.Message{Index: 0, Message: bindings.AppendMessageInput{TenantID: "t"}},
		Pending: &journal.Pending{AsRead: &journal.AsRead{Run: bindings.Run{TenantID: "t", ID: "r"}}}}
	if err := journal.CheckCommit(ok); err != nil {
		t.Fatalf("CheckCommit = %v", err)
	}
	for name, edit := range map[string]func(*journal.CommitInput){
		"no tenant": func(in *journal.CommitInput) { in.TenantID = "" },
		"index out of range": func(in *journal.CommitInput) {
			in.Message = &journal.Message{Index: len(in.Entries) + 1, Message: bindings.AppendMessageInput{TenantID: "t"}}
		},
		"message of another": func(in *journal.CommitInput) {
			in.Message = &journal.Message{Message: bindings.AppendMessageInput{TenantID: "u"}}
		},
		"queued finish":         func(in *journal.CommitInput) { in.Finish = bindings.RunQueued },
		"empty pending":         func(in *journal.CommitInput) { in.Pending = &journal.Pending{} },
		"pending without owner": func(in *journal.CommitInput) { in.Owner = "" },
		"pending of another run": func(in *journal.CommitInput) {
			in.Pending = &journal.Pending{AsRead: &journal.AsRead{Run: bindings.Run{TenantID: "t", ID: "x"}}}
		},
	} {
		in := ok
		edit(&in)
		if err := journal.CheckCommit(in); agents.CodeOf(err) != agents.CodeInvalidMessage {
			t.Errorf("%s: CheckCommit = %v, want invalid-message", name, err)
		}
	}
	if err := journal.CheckEntries([]bindings.JournalEntry{{Key: "k", Status: "done"}}); agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Errorf("CheckEntries of an unknown status = %v", err)
	}
}
