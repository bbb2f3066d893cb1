package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	agents "github.com/kindgi/agents"
)

// How pgstore classifies a storage failure (agents.PersistenceError's
// Permanent, read by agents.IsRetryable).
//
// A refusal PostgreSQL will repeat for the same statement and values is
// permanent: driving the run again cannot help, and the turn ends the run
// as failed. These are the SQLSTATE classes
//
//	21 cardinality violation     22 data exception (22P05, 22021, 22003, …)
//	23 integrity violation       42 syntax error or access rule violation
//	0A feature not supported     44 WITH CHECK OPTION violation
//	54 program limit exceeded (index row too large, stack depth, …)
//
// Class 23 is permanent as a whole: pgstore's own idempotency (journal
// entries per key and phase, messages, snapshots, approvals and facts per
// id) is decided by ON CONFLICT and conditional statements, never by
// catching a violation, so a violation that reaches pgstore is not one of
// its idempotency checks. Class 42 covers a role without the privileges
// the tables need (42501, also a row-level security WITH CHECK refusal)
// and a schema Migrate has not brought up to date: an operator must act
// before the same statement can succeed.
//
// Everything else is transient and leaves the run resumable: a lost or
// refused connection (class 08, and every error without a SQLSTATE: I/O
// errors, timeouts, a closed pool), serialization failures and deadlocks
// (40001, 40P01), cancelled statements and timeouts (57014), an
// administrator's or a crash shutdown (57P01, 57P02, 57P03), insufficient
// resources (class 53: too many connections, out of memory, disk full),
// locks not available (class 55), a read-only transaction after a
// failover (25006), system and internal errors (58, XX), and any class
// not named above. A failure while the caller's context is done is
// transient too.
func permanent(err error) bool {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || len(pg.Code) != 5 {
		return false
	}
	switch pg.Code[:2] {
	case "21", "22", "23", "42", "0A", "44", "54":
		return true
	}
	return false
}

// persistErr wraps a storage failure once: coded errors pass through, a
// context error keeps its cause, anything else is a PersistenceError,
// classified by permanent.
func persistErr(ctx context.Context, op string, err error) error {
	var c agents.Coder
	if errors.As(err, &c) {
		return err
	}
	perm := false
	if ctxErr := ctx.Err(); ctxErr != nil {
		if !errors.Is(err, ctxErr) {
			err = errors.Join(ctxErr, err)
		}
	} else {
		perm = permanent(err)
	}
	return &agents.PersistenceError{Op: op, Err: err, Permanent: perm}
}
