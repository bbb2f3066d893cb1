package memstore

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/runpage"
	"github.com/kindgi/agents/internal/runwatch"
)

var (
	_ bindings.RunDeferrer = (*Store)(nil)
	_ bindings.RunClaimer  = (*Store)(nil)
	_ bindings.RunLister   = (*Store)(nil)
	_ bindings.RunWatcher  = (*Store)(nil)
)

// holds reports whether owner holds an unexpired lease on r at now: the
// one lease rule for writes (an expired lease cannot write, even while
// nobody else took it).
func holds(r *bindings.Run, owner string, now time.Time) bool {
	return r.LeaseOwner == owner && now.Before(r.LeaseExpiresAt)
}

// ClaimRuns implements bindings.RunClaimer: under the run and approval
// locks it picks the runs that need a driver (queued; running with a
// free or expired lease; suspended with approvals or child runs, its
// approvals all decided or expired and its children all ended), oldest
// first, and leases up to in.Limit of them to in.Owner, as running.
func (s *Store) ClaimRuns(ctx context.Context, in bindings.ClaimRunsInput) ([]bindings.Run, error) {
	in, err := bindings.CheckClaim(in)
	if err := checkedCall(ctx, err); err != nil {
		return nil, err
	}
	var tenants map[string]bool
	if len(in.TenantIDs) > 0 {
		tenants = make(map[string]bool, len(in.TenantIDs))
		for _, t := range in.TenantIDs {
			tenants[t] = true
		}
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	s.hitlMu.RLock()
	defer s.hitlMu.RUnlock()
	now := s.now()

	// Whether each suspended run waits: it has an approval or a child
	// run (any), and one of its approvals is pending and unexpired or one
	// of its children has not ended (waiting).
	type waitState struct{ any, waiting bool }
	var waits map[key]*waitState
	state := func(k key) *waitState {
		w := waits[k]
		if w == nil {
			w = &waitState{}
			waits[k] = w
		}
		return w
	}
	var picked []*runRec
	for k, r := range s.runs {
		if tenants != nil && !tenants[k.tenant] {
			continue
		}
		if heldByOther(&r.run, "", now) {
			continue // a live lease: somebody drives it
		}
		if now.Before(r.run.NotBefore) {
			continue // waits on a quota (DeferRun)
		}
		switch r.run.Status {
		case bindings.RunQueued, bindings.RunRunning:
			picked = append(picked, r)
		case bindings.RunSuspended:
			if waits == nil {
				waits = map[key]*waitState{}
				for ak, a := range s.approvals {
					if tenants != nil && !tenants[ak.tenant] {
						continue
					}
					w := state(key{ak.tenant, a.Request.RunID})
					w.any = true
					if a.Status == bindings.ApprovalPending && !expired(a, now) {
						w.waiting = true
					}
				}
				for ck, c := range s.runs {
					if c.run.ParentRunID == "" || (tenants != nil && !tenants[ck.tenant]) {
						continue
					}
					w := state(key{ck.tenant, c.run.ParentRunID}) // a child counts in its own tenant only
					w.any = true
					if !c.run.Status.Terminal() {
						w.waiting = true
					}
				}
			}
			if w := waits[k]; w != nil && w.any && !w.waiting {
				picked = append(picked, r)
			}
		}
	}
	slices.SortFunc(picked, func(a, b *runRec) int {
		return cmp.Or(a.run.CreatedAt.Compare(b.run.CreatedAt),
			cmp.Compare(a.run.TenantID, b.run.TenantID), cmp.Compare(a.run.ID, b.run.ID))
	})
	if len(picked) > in.Limit {
		picked = picked[:in.Limit]
	}
	out := make([]bindings.Run, len(picked))
	for i, r := range picked {
		r.run.Status = bindings.RunRunning // it has a driver now
		r.run.NotBefore = time.Time{}
		lease(&r.run, in.Owner, in.LeaseTTL, now)
		out[i] = r.out()
	}
	return out, nil
}

// DeferRun implements bindings.RunDeferrer: the run becomes queued until
// in.NotBefore, its lease released, when in.Owner holds the lease.
func (s *Store) DeferRun(ctx context.Context, in bindings.DeferRunInput) error {
	r, err := s.lockRun(firstErr(lookupCall(ctx, in.TenantID, "run id", in.RunID), bindings.CheckID("lease owner", in.Owner)), in.TenantID, in.RunID)
	if err != nil {
		return err
	}
	defer s.runMu.Unlock()
	now := s.now()
	if !holds(&r.run, in.Owner, now) {
		return runBusy(&r.run, now)
	}
	if r.run.Status.Terminal() {
		return invalid("run " + in.RunID + " has finished: it cannot wait")
	}
	r.run.Status, r.run.NotBefore, r.run.UpdatedAt = bindings.RunQueued, in.NotBefore.UTC(), now
	lease(&r.run, "", 0, now)
	s.changed(&r.run)
	return nil
}

// ListRuns implements bindings.RunLister: the tenant's runs in the order
// (CreatedAt, ID) descending, after in.After.
func (s *Store) ListRuns(ctx context.Context, in bindings.ListRunsInput) (bindings.RunPage, error) {
	limit, err := runpage.Limit(in)
	if err := checkedCall(ctx, err); err != nil {
		return bindings.RunPage{}, err
	}
	s.runMu.RLock()
	defer s.runMu.RUnlock()
	var after *bindings.Run
	if in.After != "" {
		r := s.runs[key{in.TenantID, in.After}]
		if r == nil {
			return bindings.RunPage{}, invalid("after names no run of the tenant: " + in.After)
		}
		after = &r.run
	}
	newer := func(a, b *bindings.Run) int { // descending
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	}
	var runs []bindings.Run
	for k, r := range s.runs {
		if k.tenant != in.TenantID || (len(in.Statuses) > 0 && !slices.Contains(in.Statuses, r.run.Status)) {
			continue
		}
		if in.ParentRunID != "" && r.run.ParentRunID != in.ParentRunID {
			continue
		}
		if after != nil && newer(&r.run, after) <= 0 {
			continue
		}
		runs = append(runs, r.out())
	}
	slices.SortFunc(runs, func(a, b bindings.Run) int { return newer(&a, &b) })
	return runpage.Cut(runs, limit), nil
}

// watchHub fans run changes out to the Store's watchers, in process. Its
// zero value is ready to use.
type watchHub struct {
	mu   sync.Mutex
	subs runwatch.Subscribers
}

// WatchRuns implements bindings.RunWatcher: every change to a run of the
// Store (created, status changed, lease released, approval decided) is
// delivered to the channel without blocking the change; a watcher more
// than 64 changes behind gets a RunChange with an empty RunID once it
// catches up. The channel is closed once ctx is done.
func (s *Store) WatchRuns(ctx context.Context) (<-chan bindings.RunChange, error) {
	if err := alive(ctx); err != nil {
		return nil, err
	}
	h := &s.watch
	h.mu.Lock()
	ch := h.subs.Add()
	h.mu.Unlock()
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		h.subs.Remove(ch)
		h.mu.Unlock()
		close(ch)
	})
	return ch, nil
}

// changed tells the watchers about a change to run r, and, when r is a
// child run that ended, about its parent, which may be claimable now.
func (s *Store) changed(r *bindings.Run) {
	free := r.LeaseOwner == "" && (r.Status == bindings.RunQueued || r.Status == bindings.RunRunning)
	s.tell(bindings.RunChange{TenantID: r.TenantID, RunID: r.ID, Status: r.Status, Claimable: free})
	if r.ParentRunID != "" && r.Status.Terminal() {
		s.tell(bindings.RunChange{TenantID: r.TenantID, RunID: r.ParentRunID, Claimable: true})
	}
}

// tell delivers c to every watcher without blocking; a watcher whose
// buffer is full misses it and gets an empty RunChange once it has room.
func (s *Store) tell(c bindings.RunChange) {
	h := &s.watch
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs.Fanout(c)
}

// runBusy is the error of a write refused at now because its owner does
// not hold the run's lease: another owner holds it, or (LeaseExpired) the
// writer's lease expired and nobody holds it now.
func runBusy(r *bindings.Run, now time.Time) error {
	if heldByOther(r, "", now) {
		return &agents.RunBusyError{RunID: r.ID, Owner: r.LeaseOwner}
	}
	return &agents.RunBusyError{RunID: r.ID, LeaseExpired: true}
}
