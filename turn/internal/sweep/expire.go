package sweep

import (
	"context"
	"strings"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/agenttool"
	"github.com/kindgi/agents/turn/internal/codes"
)

// ExpireInput is what one Expire sweep works with.
type ExpireInput struct {
	// Sweeper lists the expired approvals and marks them expired.
	Sweeper bindings.ApprovalSweeper
	// Snapshots and Runs read each run's snapshot and journal.
	Snapshots bindings.RunSnapshotBinding
	Runs      bindings.RunBinding
	// Lookup finds each run's agent.
	Lookup Lookup
	// Now selects the approvals to look at.
	Now time.Time
	// Resume drives one run with its agent (turn.Resume), through bindings
	// that rec.Wrap wrapped, and returns the drive's error.
	Resume func(ctx context.Context, tenantID, runID string, a agent.Agent, rec *Recorder) error
	// DerivedID is the id of what step key of a run stores (an approval's
	// id); IDPrefix is how every such id of a run begins.
	DerivedID func(runID, key string) string
	IDPrefix  func(runID string) string
	// Fail is given each approval the sweep could not move.
	Fail func(bindings.ApprovalRef, error)
}

// Expire is turn.ExpireApprovals once its bindings are checked: it moves
// every approval that in.Sweeper lists as expired to its on-timeout
// action by driving its run once with in.Resume, then marks the approvals
// whose outcome is journaled expired. An approval that cannot be moved is
// given to in.Fail, and the sweep goes on; the returned error stops the
// sweep (a failed listing, ctx done).
func Expire(ctx context.Context, in ExpireInput) (Counts, error) {
	s := &expiry{in: in, runs: map[runRef]*sweptRun{}}
	list := func(ctx context.Context, after bindings.ApprovalRef, limit int) ([]bindings.ApprovalRef, error) {
		return in.Sweeper.ExpiredApprovals(ctx, bindings.ExpiredApprovalsInput{Now: in.Now, After: after, Limit: limit})
	}
	err := eachPage(ctx, "list expired approvals", list, func(ref bindings.ApprovalRef) error {
		return s.expire(ctx, ref)
	})
	return s.st, err
}

// expiry is one Expire call: each run is driven at most once.
type expiry struct {
	in   ExpireInput
	st   Counts
	runs map[runRef]*sweptRun
}

type runRef struct{ tenantID, runID string }

// sweptRun is how the sweep's drive of a run went.
type sweptRun struct {
	busy     bool
	failure  error           // the run could not be driven to an outcome
	err      error           // the drive's own outcome (nil, hitl-required, a turn failure)
	appended map[string]bool // derived ids (DerivedID) of the steps whose result this drive journaled
	resolved map[string]bool // derived ids of the steps with a result in the journal after the drive
}

// fail counts ref as failed with err and gives it to in.Fail.
func (s *expiry) fail(ref bindings.ApprovalRef, err error) {
	s.st.Failed++
	s.in.Fail(ref, err)
}

// expire handles one listed approval; it returns an error only when the
// sweep must stop (ctx cancelled).
func (s *expiry) expire(ctx context.Context, ref bindings.ApprovalRef) error {
	s.st.Listed++
	// The turn derives an approval's id from its run id and step key
	// (DerivedID): the drive below finds the key whose id it is.
	if !strings.HasPrefix(ref.ApprovalID, s.in.IDPrefix(ref.RunID)) {
		s.fail(ref, &agents.InvalidMessageError{Reason: "approval " + ref.ApprovalID + " was not asked for by a turn of run " + ref.RunID})
		return nil
	}
	rk := runRef{ref.TenantID, ref.RunID}
	r := s.runs[rk]
	if r == nil {
		var err error
		if r, err = s.drive(ctx, ref); err != nil {
			return err
		}
		s.runs[rk] = r
	}
	switch {
	case r.busy:
		s.st.Skipped++
	case r.failure != nil:
		s.fail(ref, r.failure)
	case r.resolved[ref.ApprovalID]:
		if _, err := s.in.Sweeper.MarkApprovalExpired(ctx, ref.TenantID, ref.ApprovalID); err != nil {
			if err := codes.Aborted(ctx); err != nil {
				return err
			}
			s.fail(ref, codes.Coded(err, "mark approval expired"))
			return nil
		}
		if r.appended[ref.ApprovalID] {
			s.st.Done++
		} else {
			s.st.Skipped++
		}
	case r.err == nil || agents.CodeOf(r.err) == agents.CodeHitlRequired:
		// Not expired by the HITL binding's clock yet, or waiting on
		// another approval of the run: nothing to do now.
		s.st.Skipped++
	default:
		s.fail(ref, r.err)
	}
	return nil
}

// drive resumes the run of ref once, recording which approval steps it
// journaled a result for, then reads which steps have one.
func (s *expiry) drive(ctx context.Context, ref bindings.ApprovalRef) (*sweptRun, error) {
	r := &sweptRun{}
	snap, err := s.in.Snapshots.Read(ctx, ref.TenantID, ref.RunID)
	if err != nil {
		r.failure = codes.Coded(err, "read run snapshot")
		return r, codes.Aborted(ctx)
	}
	a, err := agenttool.Lookup(ctx, s.in.Lookup, ref.TenantID, snap.AgentID, snap.AgentVersion)
	if err != nil {
		r.failure = err
		return r, codes.Aborted(ctx)
	}
	rec := &Recorder{appended: map[string]bool{}}
	err = s.in.Resume(ctx, ref.TenantID, ref.RunID, a, rec)
	if err := codes.Aborted(ctx); err != nil {
		return r, err
	}
	switch agents.CodeOf(err) {
	case agents.CodeRunBusy:
		r.busy = true
		return r, nil
	case "", agents.CodePersistence, agents.CodeRunJournalUnavailable, agents.CodeRunSnapshotMissing:
		if err != nil {
			// The run is left resumable: a later sweep drives it on.
			r.failure = err
			return r, nil
		}
	}
	r.err = err
	r.appended = map[string]bool{}
	for k := range rec.keys() {
		r.appended[s.in.DerivedID(ref.RunID, k)] = true
	}
	entries, jerr := s.in.Runs.ReadJournal(ctx, ref.TenantID, ref.RunID)
	if jerr != nil {
		r.failure = codes.Journal(ref.RunID, jerr)
		return r, codes.Aborted(ctx)
	}
	r.resolved = make(map[string]bool, len(entries))
	for _, e := range entries {
		if e.Status.Phase() == "result" {
			r.resolved[s.in.DerivedID(ref.RunID, e.Key)] = true
		}
	}
	return r, nil
}
