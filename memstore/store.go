// Package memstore is the in-memory implementation of every binding: the
// embedded default that needs nothing installed. A Store keeps
// conversations, run snapshots, the run journal with its leases, memory
// facts, approvals and provenance records; small companion types provide
// signing keys (Keys), tenant policies (Policies), guardrails and checks
// (Guardrails, Checks), secrets (Secrets), authorization (Allow) and a toy
// embedding model for tests and examples (HashEmbeddings). Tools live in
// the registry package.
//
// Everything is safe for concurrent use, every value handed out is a deep
// copy, and a Store passes the whole bindingstest suite. State lives as
// long as the Store: nothing is persisted.
package memstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/frozen"
)

// Options configures a Store. A nil *Options is the zero Options.
type Options struct {
	// Now is the clock (time.Now when nil). Lease and approval expiry and
	// every "zero time means now" read it.
	Now func() time.Time
	// IDs generates ids for conversations, messages and facts stored
	// without one (random 26-character strings when nil). It must return a
	// different id on every call.
	IDs func() string
	// Embeddings and EmbeddingModel compute the embedding of a fact put
	// without one (and with text). Nil Embeddings stores facts as given.
	Embeddings     bindings.EmbeddingRegistry
	EmbeddingModel string
	// ReviewerRoles is the reviewer role ladder, lowest first ("standard",
	// "senior", "admin"). When set, ResolveApproval refuses a decision
	// whose ReviewerRoles hold no role at or above the request's role on the
	// ladder; a request role not on the ladder is not checked.
	ReviewerRoles []string
	// CheckTrusted makes Commit with journal.CommitInput.Trusted check what
	// its caller vouches for as an untrusted Commit checks it, refusing an
	// entry or message that fails (an *agents.InvalidMessageError). It is
	// for the tests of a caller, to prove that what it vouches for holds;
	// without it those checks are skipped.
	CheckTrusted bool
}

// Store is an in-memory ConversationBinding, RunSnapshotBinding,
// RunBinding, MemoryStore, HitlBinding, ProvenanceEmitter and
// ComplianceRecorder. The zero
// Store is not usable; call New.
type Store struct {
	now        func() time.Time
	ids        func() string
	embeddings bindings.EmbeddingRegistry
	embedModel string
	roleRank   map[string]int
	// checkTrusted is Options.CheckTrusted.
	checkTrusted bool

	convMu sync.RWMutex
	convs  map[string]*tenantConvs

	snapMu    sync.RWMutex
	snapshots map[key]snapRec

	runMu sync.RWMutex
	runs  map[key]*runRec

	memMu sync.RWMutex
	facts map[string]*tenantFacts

	hitlMu    sync.RWMutex
	approvals map[key]*bindings.Approval

	provMu     sync.RWMutex
	provenance map[key]int
	provOrder  []bindings.ProvenanceRecord

	watch watchHub // run changes for WatchRuns

	compliance complianceLog

	quotas quotaCounts // the QuotaCounter's units (quota.go)
}

var (
	_ bindings.ConversationBinding = (*Store)(nil)
	_ bindings.RunSnapshotBinding  = (*Store)(nil)
	_ bindings.RunBinding          = (*Store)(nil)
	_ bindings.MemoryQueryBinding  = (*Store)(nil)
	_ bindings.MemoryStore         = (*Store)(nil)
	_ bindings.HitlBinding         = (*Store)(nil)
	_ bindings.ProvenanceEmitter   = (*Store)(nil)
)

// New returns an empty Store.
func New(opts *Options) *Store {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.IDs == nil {
		o.IDs = rand.Text
	}
	s := &Store{
		now:          o.Now,
		ids:          o.IDs,
		embeddings:   o.Embeddings,
		embedModel:   o.EmbeddingModel,
		checkTrusted: o.CheckTrusted,
		convs:        map[string]*tenantConvs{},
		snapshots:    map[key]snapRec{},
		runs:         map[key]*runRec{},
		facts:        map[string]*tenantFacts{},
		approvals:    map[key]*bindings.Approval{},
		provenance:   map[key]int{},
	}
	if len(o.ReviewerRoles) > 0 {
		s.roleRank = make(map[string]int, len(o.ReviewerRoles))
		for i, r := range o.ReviewerRoles {
			s.roleRank[r] = i
		}
	}
	return s
}

// key identifies a tenant's record.
type key struct{ tenant, id string }

// maxIDAttempts bounds the calls to Options.IDs for one new record.
const maxIDAttempts = 100

// errIDsExhausted is the cause of the error for an Options.IDs that keeps
// returning empty or taken ids.
var errIDsExhausted = errors.New("Options.IDs returned no unused id in 100 attempts")

// newID returns id when it is set, or a generated id that taken reports
// free. The caller holds the lock that guards taken.
func (s *Store) newID(id string, taken func(string) bool) (string, error) {
	if id != "" {
		return id, nil
	}
	for range maxIDAttempts {
		if id = s.ids(); id != "" && !taken(id) && bindings.CheckID("generated id", id) == nil {
			return id, nil
		}
	}
	return "", &agents.PersistenceError{Op: "generate id", Err: errIDsExhausted, Permanent: true}
}

// firstErr returns the first non-nil error of errs: the ids of one call
// are checked together, each with bindings.CheckID or CheckOptionalID,
// before anything is stored.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// firstInOrder sorts refs by less, a strict order, and returns the first
// limit of them, never nil: a sweep's page.
func firstInOrder[T any](refs []T, less func(a, b T) bool, limit int) []T {
	slices.SortFunc(refs, compareBy(less))
	if len(refs) > limit {
		refs = refs[:limit]
	}
	if refs == nil {
		refs = []T{}
	}
	return refs
}

// compareBy is the comparison of slices.SortFunc for the strict order less.
func compareBy[T any](less func(a, b T) bool) func(a, b T) int {
	return func(a, b T) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	}
}

// checkSweepPage checks a sweep's page: a limit of at least 1, and the
// ids of the reference it continues after (the tenant's, and the record's
// as field).
func checkSweepPage(limit int, afterTenantID, field, afterID string) error {
	if limit < 1 {
		return invalid("limit must be at least 1")
	}
	return firstErr(bindings.CheckOptionalID("after tenant id", afterTenantID), bindings.CheckOptionalID(field, afterID))
}

// lookupCall checks a call that reads or changes one record by id: its
// context alive, then its ids as bindings.CheckLookup does.
func lookupCall(ctx context.Context, tenantID, field, id string) error {
	if err := alive(ctx); err != nil {
		return err
	}
	return bindings.CheckLookup(tenantID, field, id)
}

// checkedCall checks a call: its context alive, then its input, whose
// check (the binding's check of it, nil when it passes) is given.
func checkedCall(ctx context.Context, check error) error {
	if err := alive(ctx); err != nil {
		return err
	}
	return check
}

// invalid returns the binding's error for a bad input.
func invalid(reason string) error { return &agents.InvalidMessageError{Reason: reason} }

// alive returns the context's error once it is done. Callers return it
// as is: agents.CodeOf maps it to the turn's abort code.
func alive(ctx context.Context) error { return ctx.Err() }

// cloneJSON copies a JSON document (nil stays nil).
func cloneJSON(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// jsonText is s as it reads back from a JSON string: each byte that is
// not UTF-8 becomes U+FFFD, as encoding/json writes it. The parts of a
// record that a database stores as JSON (a tool call's id and name, a step
// error) go through it, so memstore returns what pgstore returns.
func jsonText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// storedToolCalls is a copy of tcs as a store holds them.
func storedToolCalls(tcs []bindings.ToolCall) []bindings.ToolCall {
	out := cloneToolCalls(tcs)
	for i := range out {
		out[i].ID, out[i].Name = jsonText(out[i].ID), jsonText(out[i].Name)
	}
	return out
}

// storedStepError is a copy of se as a store holds it (nil stays nil).
func storedStepError(se *bindings.StepError) *bindings.StepError {
	if se == nil {
		return nil
	}
	return &bindings.StepError{Code: jsonText(se.Code), Message: jsonText(se.Message)}
}

func cloneToolCalls(tcs []bindings.ToolCall) []bindings.ToolCall {
	if tcs == nil {
		return nil
	}
	out := make([]bindings.ToolCall, len(tcs))
	for i, tc := range tcs {
		tc.Arguments = cloneJSON(tc.Arguments)
		out[i] = tc
	}
	return out
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}

// ownString copies the string at p into the front of buf, *p then aliasing
// the copy, and returns the rest of buf; an empty string, or one longer
// than half of buf, is left as it is (buf returned whole). A record's ids
// so live in its own text (whose bytes never change once written) rather
// than pointing elsewhere: the GC skips a pointer into the object it scans
// with one compare, and every GC cycle scans every record kept again.
func ownString(buf []byte, p *string) []byte {
	n := len(*p)
	if n == 0 || n > len(buf)/2 {
		return buf
	}
	copy(buf, *p)
	*p = frozen.String(buf[:n])
	return buf[n:]
}
