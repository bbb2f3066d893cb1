package childrun

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/kindgi/agents/bindings"
)

// Park is the output of a sub-agent call's parked entry in the parent's
// journal: the child run it waits on and the child's approvals pending
// when it parked.
type Park struct {
	RunID     string                     `json:"runId"`
	Approvals []bindings.ApprovalRequest `json:"approvals,omitempty"`
}

// Answer is a completed child's result as the parent's model reads it.
type Answer struct {
	Answer string          `json:"answer"`
	Output json.RawMessage `json:"output,omitempty"`
}

// Used is what a child run's model calls used.
type Used struct {
	ModelCalls   int
	InputTokens  int
	OutputTokens int
	CostUsd      float64
}

// UsedBy sums what the child run whose journal is entries used, from its
// completed model-call steps (node modelCall, keys ending in
// "/"+modelCall); an entry whose output does not decode counts nothing.
func UsedBy(entries []bindings.JournalEntry, modelCall string) Used {
	var u Used
	for i := range entries {
		e := &entries[i]
		if e.Node != modelCall || e.Status != bindings.StepCompleted || !strings.HasSuffix(e.Key, "/"+modelCall) {
			continue
		}
		var resp struct {
			Usage bindings.Usage `json:"usage"`
		}
		if json.Unmarshal(e.Output, &resp) == nil {
			u.ModelCalls++
			u.InputTokens += resp.Usage.InputTokens
			u.OutputTokens += resp.Usage.OutputTokens
			u.CostUsd += resp.Usage.CostUsd
		}
	}
	return u
}

// JournalReader reads a run's journal (bindings.RunBinding.ReadJournal).
type JournalReader interface {
	ReadJournal(ctx context.Context, tenantID, runID string) ([]bindings.JournalEntry, error)
}

// UsedByRun is UsedBy of child run childID's journal, read through runs;
// best effort: a journal that cannot be read counts nothing.
func UsedByRun(ctx context.Context, runs JournalReader, tenantID, childID, modelCall string) Used {
	entries, err := runs.ReadJournal(ctx, tenantID, childID)
	if err != nil {
		return Used{}
	}
	return UsedBy(entries, modelCall)
}
