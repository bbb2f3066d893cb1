// Package bindingstest holds the conformance suites every implementation of
// a storage binding must pass, in the manner of testing/slogtest and
// gocloud's drivertest: memstore and pgstore run them, and so does a host
// that writes its own binding.
//
// A backend test builds a Harness for each case and hands the constructor
// to a suite:
//
//	func TestConformance(t *testing.T) {
//		bindingstest.RunAll(t, func(t *testing.T) bindingstest.Harness {
//			clock := bindingstest.NewClock(time.Time{})
//			s := memstore.New(&memstore.Options{Now: clock.Now})
//			return bindingstest.Harness{
//				Conversations: s, Snapshots: s, Runs: s, Memory: s, Hitl: s,
//				Clock: clock,
//			}
//		})
//	}
//
// Every case is a subtest named after the rule it checks
// ("AppendIsIdempotentPerKeyAndPhase") and gets a fresh Harness. Cases use
// tenant ids unique to the case, so a backend that shares one database
// between cases still sees each case in isolation. Errors are checked by
// code (agents.CodeOf), never by message.
package bindingstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
)

// Harness gives the suites the bindings under test. A nil binding means the
// implementation lacks it: the suite for it skips, saying why.
type Harness struct {
	Conversations bindings.ConversationBinding
	Snapshots     bindings.RunSnapshotBinding
	Runs          bindings.RunBinding
	Memory        bindings.MemoryStore
	Hitl          bindings.HitlBinding
	// Compliance is the audit sink of guardrail evaluations (nil: its
	// suite skips).
	Compliance bindings.ComplianceRecorder
	// Quotas is the quota counter (nil: its suite skips).
	Quotas bindings.QuotaCounter
	// Clock is the clock the bindings above read the current time from
	// (memstore.Options.Now, pgstore's Now option): cases where time must
	// pass (lease and approval expiry) or where "zero means now" advance and
	// read it instead of sleeping. With a nil Clock those cases skip.
	Clock *Clock
}

// NewHarness builds a fresh Harness for one case. It may register cleanups
// with t.Cleanup and fail the test with t.Fatal.
type NewHarness func(t *testing.T) Harness

// Clock is a manual clock for the bindings under test: it reads the same
// time until a case advances it. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// DefaultStart is where a Clock created with a zero start begins.
var DefaultStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// NewClock returns a clock reading start (DefaultStart when zero). The time
// is truncated to microseconds, the precision PostgreSQL keeps.
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = DefaultStart
	}
	return &Clock{now: start.Round(0).Truncate(time.Microsecond)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// RunAll runs every suite: conversations, snapshots, the run journal,
// memory, approvals, compliance records, retention, idle conversations
// workers and quotas (the last four skip without their optional capabilities),
// and the values every binding holds or refuses (RunValueTests).
func RunAll(t *testing.T, newHarness NewHarness) {
	t.Helper()
	t.Run("Conversations", func(t *testing.T) { RunConversationTests(t, newHarness) })
	t.Run("Snapshots", func(t *testing.T) { RunSnapshotTests(t, newHarness) })
	t.Run("Journal", func(t *testing.T) { RunJournalTests(t, newHarness) })
	t.Run("Memory", func(t *testing.T) { RunMemoryTests(t, newHarness) })
	t.Run("Hitl", func(t *testing.T) { RunHitlTests(t, newHarness) })
	t.Run("ApprovalList", func(t *testing.T) { RunApprovalListTests(t, newHarness) })
	t.Run("Retention", func(t *testing.T) { RunRetentionTests(t, newHarness) })
	t.Run("Workers", func(t *testing.T) { RunClaimTests(t, newHarness) })
	t.Run("Values", func(t *testing.T) { RunValueTests(t, newHarness) })
	t.Run("Compliance", func(t *testing.T) { RunComplianceTests(t, newHarness) })
	t.Run("InactiveConversations", func(t *testing.T) { RunInactiveConversationTests(t, newHarness) })
	t.Run("Quotas", func(t *testing.T) { RunQuotaTests(t, newHarness) })
}

// caseOf is one rule of a suite, checked with a fixture F.
type caseOf[F any] struct {
	name string
	// clock marks a case that needs Harness.Clock.
	clock bool
	run   func(t *testing.T, f F)
}

// testCase is a case of the bindings' suites.
type testCase = caseOf[*fixture]

// fixture is what a case works with: its harness, a context, and tenant
// ids unique to the case.
type fixture struct {
	Harness
	ctx    context.Context
	suffix string
}

// tenant returns the case's tenant id for a short name ("a", "b").
func (f *fixture) tenant(name string) string { return "tenant-" + name + "-" + f.suffix }

// runSuite runs cases as subtests, each with a fresh harness; has reports
// whether the harness has the suite's binding. For an implementation
// without it the suite's cases do not apply: none is run (a log line says
// so), rather than each reported as skipped.
func runSuite(t *testing.T, newHarness NewHarness, binding string, has func(Harness) bool, cases []testCase) {
	t.Helper()
	if !has(newHarness(t)) {
		t.Logf("the implementation has no %s: the %d cases of it do not apply", binding, len(cases))
		return
	}
	runCases(t, cases, func(t *testing.T) (Harness, *fixture) {
		h := newHarness(t)
		return h, newFixture(t, h)
	})
}

// implements reports whether b, one of the harness's bindings, also has
// the optional capability I (false for a nil b).
func implements[I any](b any) bool {
	_, ok := b.(I)
	return ok
}

// runCases runs cases as subtests, each with the harness and fixture open
// builds for it; a case that needs the clock skips without one.
func runCases[F any](t *testing.T, cases []caseOf[F], open func(t *testing.T) (Harness, F)) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, f := open(t)
			if c.clock && h.Clock == nil {
				t.Skip("the case needs Harness.Clock to control time")
			}
			c.run(t, f)
		})
	}
}

// newFixture is a case's fixture over h, with tenant ids of its own.
func newFixture(t *testing.T, h Harness) *fixture {
	return &fixture{Harness: h, ctx: t.Context(), suffix: randomSuffix(t)}
}

func randomSuffix(t *testing.T) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random suffix: %v", err)
	}
	return hex.EncodeToString(b[:])
}
