package pgstore

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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

// WorkerRole is the database role whose members may claim runs across
// tenants (the baseline migration creates it when it may): grant it to the login
// role of the workers.
const WorkerRole = "kindgi_worker"

// NotifyChannel is the LISTEN/NOTIFY channel on which the schema's
// triggers announce run changes (see migrations/0001_baseline.up.sql).
const NotifyChannel = "kindgi_runs"

// maxClaim caps the runs one ClaimRuns call leases.
const maxClaim = 1000

// setClaimSQL admits the claim's read and lease across tenants for a
// member of kindgi_worker (the baseline migration): transaction-local, for the
// claim that follows it in the same batch. It opens agent_runs only:
// whether a parked run's approvals and child runs are settled is read from
// the run's own approvals_total, approvals_pending_until, children_total
// and children_active (the baseline migration).
const setClaimSQL = `SELECT set_config('kindgi.claim', 'runs', true)`

// sqlClaimRuns leases ($1 owner, $2 expiry, $3 now) up to $4 runs that
// need a driver, of the tenants $5 (NULL: all the connection sees),
// oldest first, skipping a run waiting on a quota until its not_before.
// The runs are locked FOR UPDATE SKIP LOCKED along
// agent_runs_claim_idx, so concurrent claimers take disjoint runs; a
// queued or suspended run becomes running (it has a driver now). A
// pending approval expires strictly after expires_at (as GetApproval
// reports). A suspended run is claimed once what it waits on is settled:
// it has approvals or child runs, none of its approvals is pending and
// unexpired, and none of its children (its tenant's runs whose
// parent_run_id it is) has not ended, as the run's own approvals_* and
// children_* columns say (kept by triggers, the baseline migration): the
// claim reads no other row.
const sqlClaimRuns = `WITH picked AS (
		SELECT r.tenant_id, r.id FROM agent_runs r
		WHERE r.status IN ('queued', 'running', 'suspended')
		  AND (r.lease_owner = '' OR r.lease_expires_at IS NULL OR r.lease_expires_at <= $3)
		  AND ($5::text[] IS NULL OR r.tenant_id = ANY($5::text[]))
		  AND (r.not_before IS NULL OR r.not_before <= $3)
		  AND (r.status <> 'suspended' OR ((r.approvals_total > 0 OR r.children_total > 0)
		    AND (r.approvals_pending_until IS NULL OR r.approvals_pending_until < $3)
		    AND r.children_active = 0))
		ORDER BY r.created_at, r.tenant_id COLLATE "C", r.id COLLATE "C"
		LIMIT $4
		FOR UPDATE OF r SKIP LOCKED
	)
	UPDATE agent_runs r SET lease_owner = $1, lease_expires_at = $2, updated_at = $3, status = 'running', not_before = NULL
	FROM picked p WHERE r.tenant_id = p.tenant_id AND r.id = p.id
	RETURNING ` + qualifiedRunCols

// qualifiedRunCols is runCols of the table aliased r.
const qualifiedRunCols = `r.tenant_id, r.id, r.flow_id, r.flow_version, r.status, r.lease_owner, r.lease_expires_at, r.created_at, r.updated_at, r.not_before, r.parent_run_id, r.parent_step_key`

// ClaimRuns implements bindings.RunClaimer with one UPDATE over rows
// locked FOR UPDATE SKIP LOCKED. With in.TenantIDs empty it claims across
// tenants, which row-level security admits only for members of
// kindgi_worker (WorkerRole) or roles that bypass it; any other role
// claims nothing. With one tenant it claims as that tenant (any role);
// with several, oldest first across them for a role that may claim across
// tenants, else tenant by tenant in the order given, oldest first within
// each. A claimed queued or suspended run is stored as running.
func (s *Store) ClaimRuns(ctx context.Context, in bindings.ClaimRunsInput) ([]bindings.Run, error) {
	in, err := bindings.CheckClaim(in)
	if err != nil {
		return nil, err
	}
	limit := min(in.Limit, maxClaim)
	if len(in.TenantIDs) == 0 {
		return s.claim(ctx, "", nil, in, limit)
	}
	if len(in.TenantIDs) > 1 {
		// One claim over every listed tenant takes the oldest runs of all
		// of them; row-level security admits it only for roles that may
		// claim across tenants. Claiming nothing here (no such role, or
		// nothing to claim) falls back to claiming as each tenant.
		runs, err := s.claim(ctx, "", in.TenantIDs, in, limit)
		if err != nil || len(runs) > 0 {
			return runs, err
		}
	}
	var out []bindings.Run
	for _, t := range in.TenantIDs {
		runs, err := s.claim(ctx, t, []string{t}, in, limit-len(out))
		if err != nil {
			return nil, err
		}
		if out = append(out, runs...); len(out) >= limit {
			break
		}
	}
	if out == nil {
		out = []bindings.Run{}
	}
	return out, nil
}

// claim runs one claim as tenantID ("" for across tenants).
func (s *Store) claim(ctx context.Context, tenantID string, tenants []string, in bindings.ClaimRunsInput, limit int) ([]bindings.Run, error) {
	now := s.stamp(time.Time{})
	exp := now.Add(in.LeaseTTL).Truncate(time.Microsecond)
	runs, err := writeThenReadAll(ctx, s, "claim runs", tenantID, scanRun,
		&stmt{sql: setClaimSQL}, stmt{sqlClaimRuns, []any{in.Owner, exp, now, limit, tenants}})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(runs, func(a, b bindings.Run) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.TenantID, b.TenantID), cmp.Compare(a.ID, b.ID))
	})
	return runs, nil
}

// sqlDeferRun queues run ($1, $2), leased to $3 unexpired at $5, until
// $4, its lease released; no row when the lease is not $3's or the run
// finished.
const sqlDeferRun = `UPDATE agent_runs
	SET status = 'queued', not_before = $4, lease_owner = '', lease_expires_at = NULL, updated_at = $5
	WHERE tenant_id = $1 AND id = $2 AND lease_owner = $3 AND lease_expires_at > $5
	  AND status NOT IN ('completed', 'failed')`

// DeferRun implements bindings.RunDeferrer with one conditional UPDATE
// (and, when it changes nothing, a read of the run to say why).
func (s *Store) DeferRun(ctx context.Context, in bindings.DeferRunInput) error {
	if err := firstErr(bindings.CheckLookup(in.TenantID, "run id", in.RunID), bindings.CheckID("lease owner", in.Owner)); err != nil {
		return err
	}
	n, err := s.exec(ctx, "defer run", in.TenantID, sqlDeferRun, in.TenantID, in.RunID, in.Owner, s.stamp(in.NotBefore), s.stamp(time.Time{}))
	if err != nil || n == 1 {
		return err
	}
	run, err := s.GetRun(ctx, in.TenantID, in.RunID)
	if err != nil {
		return err
	}
	if run.Status.Terminal() {
		return &agents.InvalidMessageError{Reason: "run " + in.RunID + " has finished: it cannot wait"}
	}
	return &agents.RunBusyError{RunID: in.RunID, Owner: run.LeaseOwner}
}

const sqlListRuns = `SELECT ` + runCols + `, ` + runErrorCols + ` FROM agent_runs
	WHERE tenant_id = $1 AND ($2::text[] IS NULL OR status = ANY($2::text[]))
	ORDER BY created_at DESC, id COLLATE "C" DESC
	LIMIT $3`

// sqlListRunsAfter continues after run $4 of the tenant.
const sqlListRunsAfter = `SELECT ` + runCols + `, ` + runErrorCols + ` FROM agent_runs
	WHERE tenant_id = $1 AND ($2::text[] IS NULL OR status = ANY($2::text[]))
	  AND (created_at, id COLLATE "C") < (SELECT a.created_at, a.id COLLATE "C" FROM agent_runs a WHERE a.tenant_id = $1 AND a.id = $4)
	ORDER BY created_at DESC, id COLLATE "C" DESC
	LIMIT $3`

// sqlListChildren is sqlListRuns of the children of run $4, along
// agent_runs_parent_idx (whose predicate the term parent_run_id <> empty
// matches in a generic plan too).
const sqlListChildren = `SELECT ` + runCols + `, ` + runErrorCols + ` FROM agent_runs
	WHERE tenant_id = $1 AND parent_run_id = $4 AND parent_run_id <> ''
	  AND ($2::text[] IS NULL OR status = ANY($2::text[]))
	ORDER BY created_at DESC, id COLLATE "C" DESC
	LIMIT $3`

// sqlListChildrenAfter is sqlListRunsAfter of the children of run $5.
const sqlListChildrenAfter = `SELECT ` + runCols + `, ` + runErrorCols + ` FROM agent_runs
	WHERE tenant_id = $1 AND parent_run_id = $5 AND parent_run_id <> ''
	  AND ($2::text[] IS NULL OR status = ANY($2::text[]))
	  AND (created_at, id COLLATE "C") < (SELECT a.created_at, a.id COLLATE "C" FROM agent_runs a WHERE a.tenant_id = $1 AND a.id = $4)
	ORDER BY created_at DESC, id COLLATE "C" DESC
	LIMIT $3`

// ListRuns implements bindings.RunLister: a keyset page along
// agent_runs_created_idx (a run's children: agent_runs_parent_idx),
// newest first.
func (s *Store) ListRuns(ctx context.Context, in bindings.ListRunsInput) (bindings.RunPage, error) {
	limit, err := runpage.Limit(in)
	if err != nil {
		return bindings.RunPage{}, err
	}
	var statuses []string
	for _, st := range in.Statuses {
		statuses = append(statuses, string(st))
	}
	var runs []bindings.Run
	afterExists := true
	err = s.batch(ctx, "list runs", in.TenantID, func(b *pgx.Batch) {
		switch {
		case in.After == "" && in.ParentRunID == "":
			b.Queue(sqlListRuns, in.TenantID, statuses, limit+1)
		case in.After == "":
			b.Queue(sqlListChildren, in.TenantID, statuses, limit+1, in.ParentRunID)
		case in.ParentRunID == "":
			b.Queue(sqlRunExists, in.TenantID, in.After)
			b.Queue(sqlListRunsAfter, in.TenantID, statuses, limit+1, in.After)
		default:
			b.Queue(sqlRunExists, in.TenantID, in.After)
			b.Queue(sqlListChildrenAfter, in.TenantID, statuses, limit+1, in.After, in.ParentRunID)
		}
	}, func(br pgx.BatchResults) error {
		if in.After != "" {
			if err := br.QueryRow().Scan(&afterExists); err != nil {
				return err
			}
		}
		return collectInto(br, &runs, scanRunWithError)
	})
	if err != nil {
		return bindings.RunPage{}, err
	}
	if !afterExists {
		return bindings.RunPage{}, invalid("after names no run of the tenant: " + in.After)
	}
	return runpage.Cut(runs, limit), nil
}

// acquirer is what WatchRuns needs of the Store's DB: a pool to take the
// LISTEN connection from.
type acquirer interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// listenHub shares one LISTEN connection among a Store's watchers: it is
// taken when the first watcher arrives and given up when the last leaves.
// Its zero value is ready to use.
type listenHub struct {
	mu     sync.Mutex
	subs   runwatch.Subscribers
	cancel context.CancelFunc
	done   chan struct{}
}

// WatchRuns implements bindings.RunWatcher with LISTEN on NotifyChannel:
// one connection taken out of Options.ListenDB, else the Store's pool (the
// DB must be a *pgxpool.Pool then), serves every watcher of the Store; it
// reconnects after a failure, then sends every watcher a RunChange with an
// empty RunID (changes may have been missed meanwhile). A notification
// arrives when the change commits. The channel is closed once ctx is done;
// when the last watcher leaves, the connection is closed first.
//
// The LISTEN connection needs a direct session: behind PgBouncer in
// transaction mode, set Options.ListenDB (or ListenURL) to the server
// itself.
func (s *Store) WatchRuns(ctx context.Context) (<-chan bindings.RunChange, error) {
	pool, ok := s.db.(acquirer)
	if s.listenDB != nil {
		pool, ok = s.listenDB, true
	}
	if !ok {
		return nil, &agents.PersistenceError{Op: "watch runs", Err: errors.New("the store's DB is not a pool: it cannot LISTEN"), Permanent: true}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h := &s.listen
	h.mu.Lock()
	ch := h.subs.Add()
	if h.done == nil {
		lctx, cancel := context.WithCancel(context.Background())
		h.cancel, h.done = cancel, make(chan struct{})
		go h.listen(lctx, pool, h.done)
	}
	h.mu.Unlock()
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		left := h.subs.Remove(ch)
		var cancel context.CancelFunc
		var done chan struct{}
		if left == 0 && h.done != nil {
			cancel, done = h.cancel, h.done
			h.cancel, h.done = nil, nil
		}
		h.mu.Unlock()
		if cancel != nil {
			cancel()
			<-done
		}
		close(ch)
	})
	return ch, nil
}

// listen holds the LISTEN connection until ctx is done, reconnecting with
// backoff after a failure.
func (h *listenHub) listen(ctx context.Context, pool acquirer, done chan struct{}) {
	defer close(done)
	backoff := 50 * time.Millisecond
	for first := true; ctx.Err() == nil; first = false {
		err := h.session(ctx, pool, !first)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			t := time.NewTimer(backoff + rand.N(backoff))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, 5*time.Second)
		}
	}
}

// session is one LISTEN connection's life: it announces a resync once
// listening when resync is set, then fans notifications out.
func (h *listenHub) session(ctx context.Context, pool acquirer, resync bool) error {
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	conn := pc.Hijack() // never back to the pool: it stays LISTENing
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		return err
	}
	if resync {
		h.fanout(bindings.RunChange{})
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		h.fanout(parseNotification(n.Payload))
	}
}

// parseNotification reads a payload of the schema's triggers: tenant, run
// id, status and 'claimable' (or ”), tab-separated.
func parseNotification(payload string) bindings.RunChange {
	parts := strings.SplitN(payload, "\t", 4)
	if len(parts) < 3 {
		return bindings.RunChange{} // not ours: look at everything
	}
	c := bindings.RunChange{TenantID: parts[0], RunID: parts[1], Status: bindings.RunStatus(parts[2])}
	if len(parts) == 4 {
		c.Claimable = parts[3] == "claimable"
	}
	return c
}

// fanout delivers c to every watcher without blocking; a watcher whose
// buffer is full misses it and gets an empty RunChange once it has room.
func (h *listenHub) fanout(c bindings.RunChange) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs.Fanout(c)
}
