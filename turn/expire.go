package turn

import (
	"context"
	"strings"
	"sync"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/turn/internal/drive"
)

// expirePage is how many expired approvals ExpireApprovals asks the store
// for at a time.
const expirePage = 100

// AgentLookup finds the agent a run was started with, by the id and
// version its snapshot recorded (registry.Agents.Get does this for one
// tenant's registry).
type AgentLookup func(ctx context.Context, tenantID, agentID, version string) (agent.Agent, error)

// ExpireStats counts what one ExpireApprovals sweep did, per approval.
type ExpireStats struct {
	// Listed is how many expired approvals the store listed.
	Listed int `json:"listed"`
	// Moved is how many approvals this sweep moved to their on-timeout
	// action: the sweep's drive of the run journaled the outcome.
	Moved int `json:"moved"`
	// Skipped approvals needed nothing from this sweep: another driver
	// moved them or holds the run right now (run-busy), or the HITL
	// binding does not read them as expired yet.
	Skipped int `json:"skipped"`
	// Failed approvals could not be moved (see Failures); a later sweep
	// tries again.
	Failed   int             `json:"failed"`
	Failures []ExpireFailure `json:"-"`
}

// ExpireFailure is one approval a sweep could not move, with the coded
// error (agents.CodeOf) that stopped it.
type ExpireFailure struct {
	TenantID   string
	RunID      string
	ApprovalID string
	Err        error
}

// ExpireApprovals(ctx, now) is the approval-expiry sweep: every
// parked run whose approval expired is moved to the on-timeout action of
// its effective HITL policy (escalate: a new approval asked one reviewer
// role up; deny: the model is told and the turn goes on; fail: the turn
// fails with hitl-required), exactly once, by driving it with Resume.
//
// b.Hitl must implement bindings.ApprovalSweeper (memstore and pgstore
// do); it lists the expired approvals of suspended runs of every tenant,
// page by page, from the oldest expiry up to now. For each run the sweep
// reads its snapshot, finds its agent with lookup, and calls Resume with
// b: the journal and the run's lease make the outcome happen once whoever
// drives it, so any number of workers may sweep at the same time. A run
// another driver holds (run-busy) is skipped, as is an approval another
// driver already moved. Once the outcome is journaled the sweep marks the
// approval expired (bindings.ApprovalSweeper.MarkApprovalExpired) so that
// it is not listed again. Whether an approval has expired is the HITL
// binding's word, read by Resume on its own clock; now only selects the
// approvals to look at.
//
// An approval that cannot be moved (its agent is gone, its provider no
// longer allowed, a storage failure) is counted in Failed with its error
// in Failures, and the sweep goes on; a later sweep tries again. The
// returned error is for the sweep itself: missing bindings, a failed
// listing, or ctx cancelled (turn-aborted), with the stats of what was
// done until then.
func ExpireApprovals(ctx context.Context, b Bindings, lookup AgentLookup, now time.Time) (ExpireStats, error) {
	var st ExpireStats
	if err := checkBindings(&b, false); err != nil {
		return st, err
	}
	if lookup == nil {
		return st, &agents.InvalidBindingsError{Reason: "ExpireApprovals needs an agent lookup"}
	}
	sweeper, ok := b.Hitl.(bindings.ApprovalSweeper)
	if !ok {
		return st, &agents.InvalidBindingsError{Reason: "ExpireApprovals needs a HITL binding that implements bindings.ApprovalSweeper"}
	}
	s := &sweep{b: b, lookup: lookup, sweeper: sweeper, runs: map[runRef]*sweptRun{}}
	in := bindings.ExpiredApprovalsInput{Now: now, Limit: expirePage}
	for {
		if err := ctx.Err(); err != nil {
			return st, &agents.TurnAbortedError{Reason: agents.AbortExternal, Err: err}
		}
		page, err := sweeper.ExpiredApprovals(ctx, in)
		if err != nil {
			return st, coded(err, "list expired approvals")
		}
		for _, ref := range page {
			if err := s.expire(ctx, ref, &st); err != nil {
				return st, err
			}
		}
		if len(page) < in.Limit {
			return st, nil
		}
		in.After = page[len(page)-1]
	}
}

// sweep is one ExpireApprovals call: each run is driven at most once.
type sweep struct {
	b       Bindings
	lookup  AgentLookup
	sweeper bindings.ApprovalSweeper
	runs    map[runRef]*sweptRun
}

type runRef struct{ tenantID, runID string }

// sweptRun is how the sweep's drive of a run went.
type sweptRun struct {
	busy     bool
	failure  error           // the run could not be driven to an outcome
	err      error           // the drive's own outcome (nil, hitl-required, a turn failure)
	appended map[string]bool // derived ids (derivedID) of the steps whose result this drive journaled
	resolved map[string]bool // derived ids of the steps with a result in the journal after the drive
}

// expire handles one listed approval; it returns an error only when the
// sweep must stop (ctx cancelled).
func (s *sweep) expire(ctx context.Context, ref bindings.ApprovalRef, st *ExpireStats) error {
	st.Listed++
	fail := func(err error) {
		st.Failed++
		st.Failures = append(st.Failures, ExpireFailure{TenantID: ref.TenantID, RunID: ref.RunID, ApprovalID: ref.ApprovalID, Err: err})
	}
	// The turn derives an approval's id from its run id and step key
	// (derivedID): the drive below finds the key whose id it is.
	if !strings.HasPrefix(ref.ApprovalID, drive.IDPrefix(ref.RunID)) {
		fail(&agents.InvalidMessageError{Reason: "approval " + ref.ApprovalID + " was not asked for by a turn of run " + ref.RunID})
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
		st.Skipped++
	case r.failure != nil:
		fail(r.failure)
	case r.resolved[ref.ApprovalID]:
		if _, err := s.sweeper.MarkApprovalExpired(ctx, ref.TenantID, ref.ApprovalID); err != nil {
			if ctx.Err() != nil {
				return &agents.TurnAbortedError{Reason: agents.AbortExternal, Err: ctx.Err()}
			}
			fail(coded(err, "mark approval expired"))
			return nil
		}
		if r.appended[ref.ApprovalID] {
			st.Moved++
		} else {
			st.Skipped++
		}
	case r.err == nil || agents.CodeOf(r.err) == agents.CodeHitlRequired:
		// Not expired by the HITL binding's clock yet, or waiting on
		// another approval of the run: nothing to do now.
		st.Skipped++
	default:
		fail(r.err)
	}
	return nil
}

// drive resumes the run of ref once, recording which approval steps it
// journaled a result for, then reads which steps have one.
func (s *sweep) drive(ctx context.Context, ref bindings.ApprovalRef) (*sweptRun, error) {
	r := &sweptRun{}
	snap, err := s.b.Snapshots.Read(ctx, ref.TenantID, ref.RunID)
	if err != nil {
		r.failure = coded(err, "read run snapshot")
		return r, aborted(ctx)
	}
	a, err := s.lookup(ctx, ref.TenantID, snap.AgentID, snap.AgentVersion)
	if err != nil {
		if agents.CodeOf(err) == "" {
			err = &agents.AgentNotFoundError{ID: snap.AgentID, Version: snap.AgentVersion}
		}
		r.failure = err
		return r, aborted(ctx)
	}
	rec := &recordingRuns{RunBinding: s.b.Runs, appended: map[string]bool{}}
	b := s.b
	if b.Journal != nil {
		b.Journal = &recordingJournal{Driver: b.Journal, rec: rec}
	} else {
		b.Runs = rec // journal.Adapt of it appends with AppendStep
	}
	_, err = Resume(ctx, ResumeInput{TenantID: ref.TenantID, RunID: ref.RunID, Agent: a}, b)
	if err := aborted(ctx); err != nil {
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
		r.appended[drive.DerivedID(ref.RunID, k)] = true
	}
	entries, jerr := s.b.Runs.ReadJournal(ctx, ref.TenantID, ref.RunID)
	if jerr != nil {
		r.failure = journalError(ref.RunID, jerr)
		return r, aborted(ctx)
	}
	r.resolved = make(map[string]bool, len(entries))
	for _, e := range entries {
		if e.Status.Phase() == "result" {
			r.resolved[drive.DerivedID(ref.RunID, e.Key)] = true
		}
	}
	return r, nil
}

// aborted returns the sweep's abort error once ctx is done.
func aborted(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return &agents.TurnAbortedError{Reason: agents.AbortExternal, Err: err}
	}
	return nil
}

// recordingRuns is the RunBinding of a sweep's drive: it notes the keys
// whose result entry this drive appended (the binding keeps one entry per
// key and phase, so exactly one driver appends an approval's outcome).
type recordingRuns struct {
	bindings.RunBinding
	mu       sync.Mutex
	appended map[string]bool
}

// AppendStep appends through the wrapped binding and notes result entries
// it stored.
func (r *recordingRuns) AppendStep(ctx context.Context, in bindings.AppendStepInput) (bindings.JournalEntry, bool, error) {
	e, appended, err := r.RunBinding.AppendStep(ctx, in)
	if err == nil {
		r.note(e, appended)
	}
	return e, appended, err
}

// note records e when this drive appended its result.
func (r *recordingRuns) note(e bindings.JournalEntry, appended bool) {
	if appended && e.Status.Phase() == "result" {
		r.mu.Lock()
		r.appended[e.Key] = true
		r.mu.Unlock()
	}
}

// recordingJournal is the journal.Driver of a sweep's drive over a store's
// own Driver: it notes, in rec, the result entries each Commit appended.
type recordingJournal struct {
	journal.Driver
	rec *recordingRuns
}

// Commit commits through the wrapped driver and notes result entries it
// stored.
func (j *recordingJournal) Commit(ctx context.Context, in journal.CommitInput) (journal.Committed, error) {
	res, err := j.Driver.Commit(ctx, in)
	for i := range res.Entries {
		if i < len(res.Appended) {
			j.rec.note(res.Entries[i], res.Appended[i])
		}
	}
	return res, err
}

func (r *recordingRuns) keys() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]bool, len(r.appended))
	for k := range r.appended {
		out[k] = true
	}
	return out
}
