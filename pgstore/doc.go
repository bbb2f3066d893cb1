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
//	b := turn.Bindings{Conversations: store, Snapshots: store, Runs: store, Memory: store, Hitl: store, Journal: store, …}
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
// round trip once the statements are prepared on the connection. The
// journal and message writes of a turn (AppendStep, AppendMessage, and
// the Driver's Open and Commit: a run's open, its entries, a message step
// with the entries around its message, the run's end) are each one
// statement: a call of a PL/pgSQL function of the baseline migration
// (kindgi_open_run, kindgi_append_steps, kindgi_append_message,
// kindgi_message_step) that sets the tenant itself, runs with the
// caller's privileges (row-level security applies inside it) and does
// the locking, checks and inserts of the whole call. Writes
// that must serialise lock their parent row first (a conversation for
// AppendMessage, a run for AppendStep) and the later statements of the
// batch see every earlier writer's rows. Journal appends are idempotent
// per (run, step key, phase) through a unique index and ON CONFLICT DO
// NOTHING; leases are taken with a conditional UPDATE, so of any number of
// concurrent acquirers of a free lease exactly one wins; an approval is
// decided by a conditional UPDATE on its pending status. The reads at the
// start of a turn ride with the writes before them (the Driver's Open and Commit):
// openTurn is a run's open (kindgi_open_run) with the read of the
// conversation and its newest messages (one statement) after the
// function, appendUserMessage is the write of the user message and the
// entries around it with the read of the history before the message,
// each under the tenant the function set and in its transaction; and
// a Commit of a message step with CheckCount sends its batch after a statement
// (kindgi_expect_messages, the baseline migration) that locks the conversation and
// fails the transaction with SQLSTATE KG001 unless its message count is
// the one openTurn read. A new run is created by its first write
// (Open with journal.LeaseOnWrite): readTurn is one read-only batch (does
// the run or its snapshot exist? the conversation, its newest messages),
// and its first Commit is the batch of its write with
// kindgi_open_new_run in front, which inserts the snapshot and the leased
// run only if neither is stored (else SQLSTATE KG002: nothing of the
// transaction is stored) and then checks the conversation. A resumed run
// is leased by its first write (Open with journal.LeaseOnWrite):
// readResumeRun is one read-only batch (the snapshot, the run with its
// last_seq, the journal, the approvals), and its first Commit is the batch
// of its write with kindgi_lease_as_read (the baseline migration) in front, which takes the lease
// only if the run's status, lease and last_seq are as read (else SQLSTATE
// KG003: nothing of the transaction is stored, and the caller gets
// run-busy).
//
// # Schema and migrations
//
// Migrations holds the schema as plain SQL files, applied by Migrate (see
// it for goose and golang-migrate). Every table is tenant-scoped: tenant_id
// leads its primary key, and TenantScopedTables lists them
// (agent_conversations, agent_conversation_messages, agent_run_snapshots,
// agent_runs, agent_run_journal, agent_memory_facts, agent_approvals,
// agent_compliance_records, and the quota counter's agent_quotas and
// agent_quota_units: a take locks its quota's row and counts in one
// round trip, see Store.Take).
// Conversations are listed by keyset pagination on (opened_at DESC, id
// DESC); the last N messages of a conversation are read by walking an
// index backwards, at a cost that does not grow with the conversation.
// The two tables a turn appends to, agent_run_journal and
// agent_conversation_messages, have no foreign keys (a key's check would
// cost every appended row a lookup of its parent): the functions that
// append lock the run's or the conversation's row first and store
// nothing when it is gone, and statement triggers delete a deleted run's
// entries and a deleted conversation's messages, as a cascade would.
// Ids and keys (a row's id and its parent's, step keys, quota names and
// units) are COLLATE "C": they sort byte-wise, as Go's strings and
// memstore do, whatever the database's collation.
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
// the one read across tenants. The baseline migration creates the NOLOGIN role
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
// the last block of migrations/0001_baseline.up.sql again by hand.
//
// Workers (ClaimRuns with no TenantIDs, used by turn.Worker) claim across
// tenants in the same way: the baseline migration creates the NOLOGIN role
// kindgi_worker (WorkerRole) and widens the tenant policies of agent_runs
// and agent_approvals for its members, only in a transaction that sets
// kindgi.claim, as ClaimRuns does for its one statement: such a
// transaction reads and leases the queued, running and suspended runs of
// every tenant and reads their approvals, and nothing else (journals,
// snapshots, messages and facts stay tenant-scoped). Grant it to the login
// role of the workers (GRANT kindgi_worker TO worker_role); for any other
// role a claim across tenants claims nothing, and a worker gives its
// tenants (WorkerOptions.TenantIDs) instead. Without CREATEROLE, create
// the role first, or run the last block of
// migrations/0001_baseline.up.sql again once it exists.
//
// # Workers and notifications
//
// Triggers of the baseline migration NOTIFY the channel kindgi_runs (NotifyChannel)
// when a run is created, changes status or has its lease released, and when
// an approval is decided. WatchRuns shares one LISTEN connection, taken from
// the Store's pool (or Options.ListenDB), among its watchers: turn.Wait and
// turn.Worker wake on it instead of polling. Only that connection needs a
// direct session; claims and journal writes are single transactions.
//
// A sub-agent's child run records its parent in agent_runs.parent_run_id
// and parent_step_key. StartRun writes them; the functions that create
// runs (kindgi_open_run, kindgi_open_new_run) take them from the
// transaction-local settings kindgi.parent_run_id and
// kindgi.parent_step_key through the columns' defaults, which pgstore
// sets in front of them for a child run only (a top-level run's open
// sends the statements it always did). Triggers keep each parent's
// children_total and children_active as its children are created, change
// status or are deleted, so that a claim takes a suspended parent once
// none of its children is queued, running or suspended by reading the
// parent's row alone; a child that completes or fails NOTIFYs its parent
// as claimable. ListRuns by parent reads agent_runs_parent_idx.
//
// # Planner statistics
//
// A backend plans each statement once, on its first call, and keeps the
// plan until the table's statistics change. On tables PostgreSQL has no
// statistics for yet, as in a schema just migrated, it may plan a run's
// lookup by (tenant_id, id) through agent_runs_created_idx and filter the
// tenant's runs by id, a cost that grows with the tenant's runs until
// autovacuum's first ANALYZE of the table (after its first 50 changed
// rows, within autovacuum_naptime) replaces the plans. After loading rows
// in bulk, or on a server with autovacuum off, run ANALYZE.
//
// # PgBouncer
//
// Behind PgBouncer in transaction mode, give the Store the PgBouncer URL
// with pgx's default_query_exec_mode=exec (or cache_describe): a named
// prepared statement, pgx's default, does not outlive its transaction
// there. Set Options.ListenURL (Open) or ListenDB (New) to the server
// itself for WatchRuns.
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
// # Values PostgreSQL refuses
//
// A Store holds every value memstore holds (bindingstest.RunValueTests
// checks it). jsonb refuses some valid JSON: a "\u0000" escape (SQLSTATE
// 22P05), a lone surrogate escape such as "\ud800", a number beyond
// numeric's range (1e200000), nesting deep enough to exhaust the server's
// stack. Wrap stores such a document as its JSON text in the envelope,
// {"v": 1, "json": "<the document as JSON text>"}, which jsonb always
// holds and Unwrap reads back as the same document; every other document
// is stored as jsonb as before, so SQL that reads fields of stored
// payloads keeps working for them. PostgreSQL's text refuses NUL bytes
// (22021) and bytes that are not UTF-8: free text (message content,
// conversation titles, fact text, approval reasons and comments) is
// stored with such characters escaped by the noncharacter U+FDD0 (NUL as
// U+FDD0 '0', a byte b that is not UTF-8 as U+FDD0 'x' and b in two hex
// digits, U+FDD0 itself doubled) and read back exactly; text without them
// is stored as it is. Ids are at most bindings.MaxIDLength bytes and step
// keys at most bindings.MaxStepKeyLength bytes, refused up front beyond
// that, so every index holds them (a btree entry holds about 2,700 bytes:
// a journal key of 1,024 bytes with a tenant and a run id of 256 each
// fits).
//
// # Errors
//
// A storage failure is *agents.PersistenceError. It is Permanent (a
// refusal the server repeats for the same input, so that
// agents.IsRetryable is false and the turn ends the run) for SQLSTATE
// classes 21, 22 (data exceptions), 23 (integrity violations: pgstore's
// own idempotency never raises one), 42 (syntax and access rules: a role
// without privileges, a schema not migrated), 0A, 44 and 54 (program
// limits). Everything else is transient and leaves the run resumable:
// lost connections and every error without a SQLSTATE, serialization
// failures and deadlocks, cancelled statements and timeouts, shutdowns,
// insufficient resources, unavailable locks, a read-only transaction
// after a failover.
//
// # Memory
//
// Keyword queries use PostgreSQL full-text search (the "simple"
// configuration over the terms of internal/keywords, which memstore uses
// too: lowercased runs of letters and digits of at most 255 bytes),
// matching facts that share any term with the query and ranking them with
// ts_rank_cd. A query searches for at most 64 of its distinct terms, the
// most distinctive ones (the longest, then the rarest in the query), so
// that a query of any size costs bounded time and never fails on size; a
// fact is indexed under all its terms, or, for a text of hundreds of KiB
// of distinct words, under each distinct term once as long as they fit an
// index of 768 KiB (PostgreSQL refuses a tsvector over 1 MiB). Embeddings
// are stored as real[] with their norm; semantic queries compute cosine
// similarity in SQL, so pgvector is not needed (nor used: every fact in
// scope with an embedding is scored, which suits tenants with thousands of
// facts rather than millions). Mode both fuses the two full rankings by
// reciprocal rank (k = 60).
package pgstore
