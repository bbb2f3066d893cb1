// Package runpage holds the rules of bindings.RunLister that the reference
// stores share: which run statuses exist, how a ListRunsInput is checked
// and its page size chosen, and how the runs fetched (one past the page,
// to tell whether another follows) are cut to a page.
package runpage

import (
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// ValidStatus reports whether st is one of the run statuses.
func ValidStatus(st bindings.RunStatus) bool {
	switch st {
	case bindings.RunQueued, bindings.RunRunning, bindings.RunSuspended, bindings.RunCompleted, bindings.RunFailed:
		return true
	}
	return false
}

// Limit checks a ListRuns input and returns its page size: Limit, or
// bindings.DefaultRunPageLimit when zero, at most bindings.MaxRunPageLimit.
// A bad input is *agents.InvalidMessageError (or the bindings.CheckID
// error of a bad id).
func Limit(in bindings.ListRunsInput) (int, error) {
	if err := bindings.CheckID("tenant id", in.TenantID); err != nil {
		return 0, err
	}
	if err := bindings.CheckOptionalID("after", in.After); err != nil {
		return 0, err
	}
	if err := bindings.CheckOptionalID("parent run id", in.ParentRunID); err != nil {
		return 0, err
	}
	for _, st := range in.Statuses {
		if !ValidStatus(st) {
			return 0, &agents.InvalidMessageError{Reason: "unknown run status " + string(st)}
		}
	}
	switch {
	case in.Limit < 0:
		return 0, &agents.InvalidMessageError{Reason: "limit must not be negative"}
	case in.Limit == 0:
		return bindings.DefaultRunPageLimit, nil
	case in.Limit > bindings.MaxRunPageLimit:
		return bindings.MaxRunPageLimit, nil
	}
	return in.Limit, nil
}

// Cut is the page of runs (newest first): the first limit of them, with
// Next naming the last of those when more follow. Runs is never nil.
func Cut(runs []bindings.Run, limit int) bindings.RunPage {
	page := bindings.RunPage{Runs: runs}
	if len(runs) > limit {
		page.Runs = runs[:limit]
		page.Next = runs[limit-1].ID
	}
	if page.Runs == nil {
		page.Runs = []bindings.Run{}
	}
	return page
}
