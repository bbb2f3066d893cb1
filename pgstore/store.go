package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// DB is what a Store needs from PostgreSQL. Both *pgxpool.Pool and pgx.Tx
// satisfy it (so does *pgx.Conn): hand New a pool for normal use, or a
// transaction to make a Store's writes part of it.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

var (
	_ DB = (*pgxpool.Pool)(nil)
	_ DB = (pgx.Tx)(nil)
	_ DB = (*pgx.Conn)(nil)
)

// Options tune a Store. A nil *Options uses the defaults.
type Options struct {
	// Now is the clock used for timestamps, lease expiry and approval
	// expiry; nil means time.Now. Times are stored with microsecond
	// precision. Leases compare the clocks of the workers that take them,
	// so keep the workers' clocks synchronised (NTP) well within the lease
	// TTL.
	Now func() time.Time
	// IDs generates the ids of conversations and messages opened or
	// appended without one; nil means random 128-bit hex ids.
	IDs func() string
	// Embeddings, with EmbeddingModel, computes a fact's embedding in
	// PutFact when the fact has none. Nil stores facts without one.
	Embeddings     bindings.EmbeddingRegistry
	EmbeddingModel string
	// ListenDB, when set, is the pool WatchRuns takes its LISTEN
	// connection from instead of the Store's DB: a pool on the PostgreSQL
	// server itself when the DB reaches it through PgBouncer in transaction
	// mode, which gives a client no session to LISTEN on. The Store does
	// not close it.
	ListenDB *pgxpool.Pool
	// ListenURL is for Open: it connects a pool to this URL (a direct
	// session, see ListenDB) for WatchRuns, unless ListenDB is set; the
	// Store's Close closes it. New ignores it.
	ListenURL string
}

// Store implements the storage bindings over PostgreSQL: ConversationBinding,
// RunSnapshotBinding, RunBinding, MemoryStore, HitlBinding and
// ComplianceRecorder. The schema is
// the one Migrate applies. Every call runs as one implicit transaction (a
// pgx batch: one network round trip) that first sets the transaction-local
// kindgi.tenant_id (a statement of its own, or inside the function a write
// calls), so row-level security admits only the caller's tenant.
// A Store is safe for concurrent use when its DB is (a pool is; a single
// transaction or connection is not).
type Store struct {
	db      DB
	now     func() time.Time
	ids     func() string
	embed   bindings.EmbeddingRegistry
	model   string
	closeFn func()
	listen  listenHub // the LISTEN connection of WatchRuns

	listenDB *pgxpool.Pool // Options.ListenDB (or Open's of ListenURL); nil: db
}

var (
	_ bindings.ConversationBinding = (*Store)(nil)
	_ bindings.RunSnapshotBinding  = (*Store)(nil)
	_ bindings.RunBinding          = (*Store)(nil)
	_ bindings.MemoryStore         = (*Store)(nil)
	_ bindings.HitlBinding         = (*Store)(nil)
)

// New returns a Store over db, whose schema Migrate has applied. opts may
// be nil.
func New(db DB, opts *Options) *Store {
	s := &Store{db: db, now: time.Now, ids: randomID}
	if opts != nil {
		if opts.Now != nil {
			s.now = opts.Now
		}
		if opts.IDs != nil {
			s.ids = opts.IDs
		}
		s.embed = opts.Embeddings
		s.model = opts.EmbeddingModel
		s.listenDB = opts.ListenDB
	}
	return s
}

// Open connects a pool to the database at url (a PostgreSQL URL or DSN),
// applies the migrations, and returns a Store that owns the pool: Close
// closes it. With opts.ListenURL set (and no opts.ListenDB), it connects
// the LISTEN pool of WatchRuns to that URL too, and Close closes both.
// opts may be nil.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	pool, err := connect(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	s := New(pool, opts)
	s.closeFn = pool.Close
	if opts != nil && opts.ListenDB == nil && opts.ListenURL != "" {
		listen, err := connect(ctx, opts.ListenURL)
		if err != nil {
			pool.Close()
			return nil, err
		}
		s.listenDB = listen
		s.closeFn = func() { pool.Close(); listen.Close() }
	}
	return s, nil
}

// connect returns a pool on url that answered a ping.
func connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, &agents.PersistenceError{Op: "open", Err: err}
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, &agents.PersistenceError{Op: "open", Err: err}
	}
	return pool, nil
}

// DB returns the database the Store runs on.
func (s *Store) DB() DB { return s.db }

// Close closes the pool of a Store made by Open; for a Store made by New it
// does nothing (the caller owns the DB).
func (s *Store) Close() {
	if s.closeFn != nil {
		s.closeFn()
	}
}

// setTenantSQL makes kindgi.tenant_id transaction-local: it is the first
// statement of every batch the Store sends.
const setTenantSQL = `SELECT set_config('kindgi.tenant_id', $1, true)`

// batch runs the statements queued by queue after setting the tenant, as
// one implicit transaction in one round trip, and hands each result to
// read in order. read must consume exactly the queued statements.
func (s *Store) batch(ctx context.Context, op, tenantID string, queue func(b *pgx.Batch), read func(br pgx.BatchResults) error) error {
	return s.send(ctx, op, func(b *pgx.Batch) {
		b.Queue(setTenantSQL, tenantID)
		queue(b)
	}, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		return read(br)
	})
}

// exec runs one statement in a batch under the tenant's setting and
// returns how many rows it changed.
func (s *Store) exec(ctx context.Context, op, tenantID, sql string, args ...any) (int64, error) {
	var n int64
	err := s.batch(ctx, op, tenantID, func(b *pgx.Batch) {
		b.Queue(sql, args...)
	}, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		n = tag.RowsAffected()
		return err
	})
	return n, err
}

// send runs the statements queued by queue as one implicit transaction in
// one round trip, and hands each result to read in order, like batch but
// without setting the tenant: for statements that set it themselves (the
// functions of the baseline migration).
func (s *Store) send(ctx context.Context, op string, queue func(b *pgx.Batch), read func(br pgx.BatchResults) error) error {
	b := &pgx.Batch{}
	queue(b)
	br := s.db.SendBatch(ctx, b)
	err := read(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return persistErr(ctx, op, err)
	}
	return nil
}

// stamp returns t, or the clock's now when t is zero, in UTC with the
// microsecond precision PostgreSQL stores.
func (s *Store) stamp(t time.Time) time.Time {
	if t.IsZero() {
		t = s.now()
	}
	return t.UTC().Truncate(time.Microsecond)
}

// utc normalises a time read from PostgreSQL.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func invalid(reason string) error { return &agents.InvalidMessageError{Reason: reason} }
