// Package pgstore implements the storage bindings on PostgreSQL with pgx:
// bindings.ConversationBinding, bindings.RunSnapshotBinding,
// bindings.RunBinding (the run journal, run status and leases),
// bindings.MemoryStore and bindings.HitlBinding, all passing the
// bindings/bindingstest conformance suite that memstore passes. Every turn
// worker can point at one database, and any worker can continue any
// parked or crashed run.
//
// # Opening a store
//
// Open connects a pool, applies the migrations and returns a Store that
// owns the pool:
//
//	store, err := pgstore.Open(ctx, os.Getenv("KINDGI_DATABASE_URL"), nil)
//	if err != nil { … }
//	defer store.Close()
//	b := turn.Bindings{Conversations: store, Snapshots: store, Runs: store, Memory: store, Hitl: store, …}
//
// New wraps a DB you manage: a *pgxpool.Pool, or a pgx.Tx to make the
// Store's writes part of your transaction. Options sets the clock, the id
// generator, and an EmbeddingRegistry that computes a fact's embedding on
// PutFact.
//
// # One round trip per call
//
// Each binding call is one pgx batch: it sets the transaction-local tenant
// (set_config('kindgi.tenant_id', tenant, true)) and runs its statements,
// all in the implicit transaction of one pipeline, so it costs one network
// round trip once the statements are prepared on the connection. Writes
// that must serialise lock their parent row first (a conversation for
// AppendMessage, a run for AppendStep) and the later statements of the
// batch see every earlier writer's rows. Journal appends are idempotent
// per (run, step key, phase) through a unique index and ON CONFLICT DO
// NOTHING; leases are taken with a conditional UPDATE, so of any number of
// concurrent acquirers of a free lease exactly one wins; an approval is
// decided by a conditional UPDATE on its pending status.
//
// # Schema and migrations
//
// Migrations holds the schema as plain SQL files, applied by Migrate (see
// it for goose and golang-migrate). Every table is tenant-scoped: tenant_id
// leads its primary key, and TenantScopedTables lists them
// (agent_conversations, agent_conversation_messages, agent_run_snapshots,
// agent_runs, agent_run_journal, agent_memory_facts, agent_approvals).
// Conversations are listed by keyset pagination on (opened_at DESC, id
// DESC); the last N messages of a conversation are read by walking an
// index backwards, at a cost that does not grow with the conversation.
// Times are stored with microsecond precision. AgentConversationRow,
// NewAgentConversationRow, AgentRunSnapshotRow and NewAgentRunSnapshotRow
// mirror the two tables hosts query most (ConversationsTable,
// RunSnapshotsTable), with db tags for pgx.RowToStructByName.
//
// # Row-level security
//
// Each table has a policy admitting only rows whose tenant_id equals
// current_setting('kindgi.tenant_id', true), with row-level security
// enabled and forced. A connection that has not set it (or set another
// tenant) sees and changes no row. Superusers and roles with BYPASSRLS skip
// policies, so run the application as an ordinary role granted SELECT,
// INSERT, UPDATE and DELETE on the tables; tenancy is also enforced in
// every query, so a Store behaves the same either way.
//
// The approval sweep (ExpiredApprovals, used by turn.ExpireApprovals) is
// the one read across tenants. Migration 0003 creates the NOLOGIN role
// kindgi_sweeper and two FOR SELECT policies for its members alone: in a
// transaction that sets kindgi.sweep, as ExpiredApprovals does, they show
// the pending approvals that have an expiry and the suspended runs of
// every tenant, and allow no write. Grant the role to the login role of
// the workers that run the sweep (GRANT kindgi_sweeper TO worker_role,
// with inheritance, the default); for any other role setting kindgi.sweep
// shows nothing, and ExpiredApprovals lists no approval. If the role that
// migrates may not create roles and kindgi_sweeper does not exist, the
// migration creates no sweep policy; create the role (CREATE ROLE
// kindgi_sweeper NOLOGIN) before migrating, or afterwards and then run
// migrations/0003_retention.up.sql again by hand.
//
// Workers (ClaimRuns with no TenantIDs, used by turn.Worker) claim across
// tenants in the same way: migration 0004 creates the NOLOGIN role
// kindgi_worker (WorkerRole) and widens the tenant policies of agent_runs
// and agent_approvals for its members, only in a transaction that sets
// kindgi.claim, as ClaimRuns does for its one statement: such a
// transaction reads and leases the queued, running and suspended runs of
// every tenant and reads their approvals, and nothing else (journals,
// snapshots, messages and facts stay tenant-scoped). Grant it to the login
// role of the workers (GRANT kindgi_worker TO worker_role); for any other
// role a claim across tenants claims nothing, and a worker gives its
// tenants (WorkerOptions.TenantIDs) instead. Without CREATEROLE, create
// the role first, or run migrations/0004_workers.up.sql again once it
// exists.
//
// # Workers and notifications
//
// Triggers of migration 0004 NOTIFY the channel kindgi_runs (NotifyChannel)
// when a run is created, changes status or has its lease released, and when
// an approval is decided. WatchRuns shares one LISTEN connection, taken from
// the Store's pool, among its watchers: turn.Wait and turn.Worker wake on
// it instead of polling. Only that connection needs a direct session
// (behind PgBouncer in transaction mode, give the Store a pool to the
// server itself or accept polling); claims and journal writes are single
// transactions.
//
// # Payload envelopes
//
// JSON payloads (message tool calls and metadata, snapshot inputs, journal
// outputs and errors, fact data, approval arguments) are stored as JSONB
// envelopes {"v": version, "doc": document}. Wrap, Unwrap, UnwrapInto and
// MustUnwrap read and write them; CurrentPayloadVersion is the version this
// build writes. A stored payload that is not an envelope is reported as
// *MalformedEnvelopeError, one of a newer version as
// *UnsupportedPayloadVersionError; both are EnvelopeErrors. JSONB
// normalises documents: whitespace and the order of object keys are not
// kept.
//
// # Memory
//
// Keyword queries use PostgreSQL full-text search (the "simple"
// configuration: lowercased words, no stemming), matching facts that share
// any word with the query and ranking them with ts_rank_cd. Embeddings are
// stored as real[] with their norm; semantic queries compute cosine
// similarity in SQL, so pgvector is not needed (nor used: every fact in
// scope with an embedding is scored, which suits tenants with thousands of
// facts rather than millions). Mode both fuses the two full rankings by
// reciprocal rank (k = 60).
package pgstore
