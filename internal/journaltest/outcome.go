package journaltest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Outcome is what one run of a crash scenario left behind, in the form the
// scenario compares: the conversation, the result and the journal (with
// clock fields removed), how often each tool request id ran, how many
// drives it took and which write crashed.
type Outcome struct {
	Messages any
	Result   any
	Journal  any
	ToolRuns map[string]int
	Drives   int
	FailedOp string
}

// CarriesCompletion reports whether the crashed write op would have stored
// the completed entry of step key: alone (AppendStep) or among others
// (a Commit: "Commit [key status, …]").
func CarriesCompletion(op, key string) bool {
	e := key + " completed"
	return op == "AppendStep "+e || strings.Contains(op, "["+e+"]") || strings.Contains(op, "["+e+", ") ||
		strings.Contains(op, ", "+e+"]") || strings.Contains(op, ", "+e+", ")
}

// CheckAgainstBaseline reports on t every way got, a run crashed after n
// writes in mode ("fail" or "panic") and then resumed, differs from base,
// the uninterrupted run: the conversation, result and journal must be
// equal; every tool request id must have run once, except a call whose own
// completion was the crashed write, which may have run a second time with
// the same request id (its idempotency key). runID is the prefix of the
// request ids, "RUN/".
func CheckAgainstBaseline(t testing.TB, mode string, n int, runID string, base, got Outcome) {
	t.Helper()
	for _, c := range []struct {
		what      string
		want, got any
	}{
		{"conversation", base.Messages, got.Messages},
		{"result", base.Result, got.Result},
		{"journal", base.Journal, got.Journal},
	} {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s after %d writes (%s): %s (-want +got):\n%s", mode, n, got.FailedOp, c.what, diff)
		}
	}
	for id, runs := range got.ToolRuns {
		reran := CarriesCompletion(got.FailedOp, strings.TrimPrefix(id, runID+"/"))
		if runs != 1 && !(runs == 2 && reran) {
			t.Errorf("%s after %d writes (%s): %s ran %d times", mode, n, got.FailedOp, id, runs)
		}
	}
	if len(got.ToolRuns) != len(base.ToolRuns) {
		t.Errorf("%s after %d writes: tool request ids %v, want %v", mode, n, got.ToolRuns, base.ToolRuns)
	}
	t.Logf("crash %-5s after write %2d at %-62s drives %d, tool runs %v", mode, n, got.FailedOp, got.Drives, got.ToolRuns)
}
