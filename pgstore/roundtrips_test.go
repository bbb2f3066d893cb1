package pgstore

import (
	"context"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// roundTrips is a pgx tracer that counts what a pool sends: plain
// statements, batches (one network round trip each once their statements
// are prepared), the operation of each batch, and the writes on the
// connections' sockets — every round trip starts with one.
type roundTrips struct {
	mu      sync.Mutex
	queries int
	batches int
	stmts   int // statements: a plain query is one, a batch its queued ones
	writers int // round trips holding a write (each batch is one implicit transaction: one commit)
	ops     map[string]int
	writes  atomic.Int64
}

var (
	_ pgx.QueryTracer = (*roundTrips)(nil)
	_ pgx.BatchTracer = (*roundTrips)(nil)
)

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queries++
	r.stmts++
	if writes(data.SQL) {
		r.writers++
	}
	r.ops[queryName(data.SQL)]++
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches++
	r.stmts += len(data.Batch.QueuedQueries)
	for _, q := range data.Batch.QueuedQueries {
		if writes(q.SQL) {
			r.writers++
			break
		}
	}
	name := "batch"
	if q := data.Batch.QueuedQueries; len(q) > 1 && q[0].SQL == setTenantSQL {
		name = opName(q[1].SQL)
	} else if len(q) > 0 {
		name = opName(q[0].SQL)
	}
	r.ops[name]++
	return ctx
}

func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// reset zeroes the counters.
func (r *roundTrips) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queries, r.batches, r.stmts, r.writers, r.ops = 0, 0, 0, 0, map[string]int{}
	r.writes.Store(0)
}

// statements returns the statements sent and the round trips that wrote
// (each one transaction, so one commit).
func (r *roundTrips) statements() (stmts, writers int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stmts, r.writers
}

// perStatement caches f's answer per statement text: the benchmarks'
// tracer asks for every statement and round trip, and its client CPU is
// reported.
type perStatement[T any] struct {
	m sync.Map
	f func(sql string) T
}

func (c *perStatement[T]) get(sql string) T {
	if v, ok := c.m.Load(sql); ok {
		return v.(T)
	}
	v := c.f(sql)
	c.m.Store(sql, v)
	return v
}

// writes reports whether a statement changes data (so its transaction's
// commit is a durable one).
func writes(sql string) bool { return writesOf.get(sql) }

var writesOf = perStatement[bool]{f: writesUncached}

func writesUncached(sql string) bool {
	s := strings.ToLower(sql)
	for _, w := range []string{"insert ", "update ", "delete ", "merge ", "kindgi_append_", "kindgi_open_run", "kindgi_open_new_run", "kindgi_message_step", "kindgi_lease_as_read"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// snapshot returns the counters and the operations as sorted "name ×n".
func (r *roundTrips) snapshot() (queries, batches int, writes int64, ops []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, n := range r.ops {
		ops = append(ops, name+" ×"+itoa(n))
	}
	sort.Strings(ops)
	return r.queries, r.batches, r.writes.Load(), ops
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// opName names a Store operation by the first statement after the tenant
// setting.
func opName(sql string) string { return opNames.get(sql) }

// queryName is the tracer's name of a plain query.
func queryName(sql string) string { return queryNames.get(sql) }

var (
	opNames    = perStatement[string]{f: opNameUncached}
	queryNames = perStatement[string]{f: func(sql string) string { return "query: " + firstWords(sql) }}
)

func opNameUncached(sql string) string {
	for name, stmt := range map[string]string{
		"Snapshots.Write": sqlWriteSnapshot, "Snapshots.Read": sqlReadSnapshot,
		"Runs.StartRun": sqlStartRun, "Runs.GetRun": sqlGetRun, "Runs.AppendSteps": sqlAppendSteps, "Runs.OpenRun": sqlOpenRunFn,
		"ReadTurn": sqlRunOrSnapshotExists, "OpenUserMessageStep": sqlOpenNewRun, "AppendUserMessageStep": sqlExpectMessages,
		"Runs.ReadJournal": sqlRunExists, "Runs.SetRunStatus": sqlSetRunStatus,
		"Runs.AcquireLease": sqlAcquireLease, "Runs.ReleaseLease": sqlReleaseLease,
		"Conversations.Open": sqlOpenConversation, "Conversations.Get": sqlGetConversation,
		"Conversations.AppendMessage": sqlAppendMessageFn, "Conversations.ReadMessages": sqlConversationExists,
		"Conversations.Close": sqlCloseConversation, "Conversations.List": sqlListConversations,
		"Hitl.RequestApproval": sqlRequestApproval, "Hitl.Get": sqlGetApproval, "Hitl.Resolve": sqlResolveApproval,
		"Memory.PutFact": sqlPutFact,
	} {
		if sql == stmt {
			return name
		}
	}
	if strings.Contains(sql, "agent_memory_facts") {
		return "Memory.QueryFacts"
	}
	return "other: " + firstWords(sql)
}

func firstWords(sql string) string {
	f := strings.Fields(sql)
	if len(f) > 4 {
		f = f[:4]
	}
	return strings.Join(f, " ")
}

// countingConn counts the writes on a connection's socket.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// tracedPool returns a pool on the test database whose statements and
// socket writes rt counts. Liveness pings on acquire are off, so every
// write is the Store's. params are run-time parameters, name then value.
func tracedPool(t testing.TB, maxConns int32, params ...string) (*pgxpool.Pool, *roundTrips) {
	t.Helper()
	testPool(t)
	rt := &roundTrips{ops: map[string]int{}}
	cfg := testEnv.config.Copy()
	for i := 0; i+1 < len(params); i += 2 {
		cfg.ConnConfig.RuntimeParams[params[i]] = params[i+1]
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.Tracer = rt
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	var d net.Dialer
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, writes: &rt.writes}, nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, rt
}
